#include "workloads/training/dispatch/TokenDispatcher.hpp"

namespace memwall {

Registry<TokenDispatcherFactory>& token_dispatcher_registry()
{
  static Registry<TokenDispatcherFactory> registry("MoE token dispatcher", "training.moe_dispatcher", "dispatchers");
  return registry;
}

} // namespace memwall

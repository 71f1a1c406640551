#include "workloads/training/dispatch/TokenDispatcher.hpp"

namespace memwall {

Registry<TokenDispatcherFactory>& token_dispatcher_registry()
{
  static Registry<TokenDispatcherFactory> registry("MoE token dispatcher", "training.moe_dispatcher", "dispatchers",
                                                   "alltoall", "training");
  return registry;
}

std::shared_ptr<const TokenDispatcher> default_token_dispatcher(const std::string& name)
{
  return token_dispatcher_registry().make_with_defaults(name);
}

} // namespace memwall

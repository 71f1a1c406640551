#include "sim/paging/EvictionPolicy.hpp"

namespace memwall {

Registry<EvictionFactory>& eviction_registry()
{
  static Registry<EvictionFactory> registry("eviction policy", "memory.eviction", "eviction-policies");
  return registry;
}

} // namespace memwall

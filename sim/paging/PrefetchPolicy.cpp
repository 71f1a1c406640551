#include "sim/paging/PrefetchPolicy.hpp"

namespace memwall {

Registry<PrefetchFactory>& prefetch_registry()
{
  static Registry<PrefetchFactory> registry("prefetch policy", "memory.prefetch", "prefetch-policies");
  return registry;
}

} // namespace memwall

#include "sim/collective/CollectiveAlgorithm.hpp"

namespace memwall {

Registry<CollectiveFactory>& collective_registry()
{
  static Registry<CollectiveFactory> registry("collective algorithm", "hardware.network.collective_algorithm",
                                              "collectives");
  return registry;
}

} // namespace memwall

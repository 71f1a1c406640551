#include "RingSteps.hpp"

namespace memwall {

CollectivePhase ring_step(const std::vector<DeviceRef>& members, double bytes)
{
  return ring_step(std::vector<std::vector<DeviceRef>>{members}, bytes);
}

CollectivePhase ring_step(const std::vector<std::vector<DeviceRef>>& rings, double bytes)
{
  CollectivePhase p;
  for (const auto& ring : rings)
    for (size_t k = 0; k < ring.size() && ring.size() > 1; ++k)
      p.flows.push_back({ring[k], ring[(k + 1) % ring.size()], bytes});
  return p;
}

int ring_steps(CollectiveKind kind, size_t n)
{
  int m = static_cast<int>(n) - 1;
  return kind == CollectiveKind::all_reduce ? 2 * m : m;
}

double ring_chunk(CollectiveKind /*kind*/, size_t n, double bytes)
{
  // Every step moves one n-th of the buffer: reduce-scatter and all-gather take n-1
  // steps, all-reduce (one of each) 2(n-1).
  return bytes / static_cast<double>(n);
}

} // namespace memwall

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

void append_bulk_steps(std::vector<CollectivePhase>& phases, const std::vector<std::vector<DeviceRef>>& rings, int steps,
                       double chunk, double hop_latency)
{
  if (steps <= 0)
    return;
  phases.push_back(ring_step(rings, steps * chunk));
  // One step's latency is already on the flows' routes; the other steps' are not.
  if (steps > 1 && hop_latency > 0)
    phases.push_back({{}, (steps - 1) * hop_latency});
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

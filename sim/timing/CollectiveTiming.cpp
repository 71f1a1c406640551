#include "sim/timing/CollectiveTiming.hpp"

#include "sim/collective/RingSteps.hpp"

#include <algorithm>

namespace memwall {
namespace {

// Bytes each port carries per byte of the buffer: bus bandwidth = this x algorithm bandwidth.
double bus_factor(CollectiveKind k, int n)
{
  return k == CollectiveKind::send_recv ? 1.0 : ring_steps(k, static_cast<size_t>(n)) / static_cast<double>(n);
}

} // namespace

CollectiveTiming nvlink_collective_timing(const GpuSpec& g, CollectiveKind kind, int ranks, double bytes,
                                          double hop_latency_s)
{
  CollectiveTiming t;
  if (!g.profile || g.nvlink_bw <= 0 || ranks < 2 || kind == CollectiveKind::all_to_all || bytes <= 0)
    return t;
  CollectiveKind curve_kind = kind;
  const CollectiveCurve* c  = g.profile->collective(collective_name(kind), ranks, ranks);
  if (!c && (kind == CollectiveKind::all_gather || kind == CollectiveKind::reduce_scatter)) {
    curve_kind = CollectiveKind::all_reduce;
    c          = g.profile->collective(collective_name(curve_kind), ranks, ranks);
  }
  if (!c || c->curve.empty())
    return t;
  // The curve's regime at the size whose collective moves the same bytes per port, its
  // bus bandwidth, and its latency per ring step.
  const size_t n    = static_cast<size_t>(ranks);
  const Regime& r   = c->curve.regime(bus_factor(kind, ranks) * bytes / bus_factor(curve_kind, ranks));
  double efficiency = std::min(1.0, bus_factor(curve_kind, ranks) * r.bandwidth / g.nvlink_bw);
  if (efficiency > 0)
    t.flow_scale = 1.0 / efficiency;
  t.delay_s = std::max(0.0, r.latency_s - ring_steps(kind, n) * hop_latency_s);
  return t;
}

} // namespace memwall

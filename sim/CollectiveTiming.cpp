#include "CollectiveTiming.hpp"

#include <algorithm>

namespace memwall {
namespace {

// Ring steps, and bytes each port carries per byte of the buffer (the bus-bandwidth factor).
int steps(CollectiveKind k, int n) { return k == CollectiveKind::all_reduce ? 2 * (n - 1) : k == CollectiveKind::send_recv ? 1 : n - 1; }
double bus_factor(CollectiveKind k, int n)
{
  if (k == CollectiveKind::send_recv)
    return 1.0;
  double f = static_cast<double>(n - 1) / n;
  return k == CollectiveKind::all_reduce ? 2 * f : f;
}

} // namespace

CollectiveTiming nvlink_collective_timing(const GpuSpec& g, CollectiveKind kind, int ranks, double bytes,
                                          double hop_latency_s)
{
  CollectiveTiming t;
  if (!g.profile || g.nvlink_bw <= 0 || ranks < 2 || kind == CollectiveKind::all_to_all || bytes <= 0)
    return t;
  const CollectiveCurve* c = g.profile->collective(collective_name(kind), ranks, ranks);
  double latency_share     = 1.0;
  if (!c && (kind == CollectiveKind::all_gather || kind == CollectiveKind::reduce_scatter)) {
    c             = g.profile->collective("all_reduce", ranks, ranks);
    latency_share = 0.5;
  }
  if (!c || c->curve.empty())
    return t;
  // The curve's all-reduce-equivalent regime at this buffer size: for AG/RS borrowing the
  // all-reduce curve, the size whose all-reduce moves the same bytes per port.
  double bus_bytes = bus_factor(kind, ranks) * bytes;
  double ar_size   = latency_share < 1.0 ? bus_bytes / bus_factor(CollectiveKind::all_reduce, ranks) : bytes;
  const Regime& r  = c->curve.regime(ar_size);
  double bus_bw    = (latency_share < 1.0 ? bus_factor(CollectiveKind::all_reduce, ranks) : bus_factor(kind, ranks)) *
                  r.bandwidth;
  double efficiency = std::min(1.0, bus_bw / g.nvlink_bw);
  if (efficiency > 0)
    t.flow_scale = 1.0 / efficiency;
  t.delay_s = std::max(0.0, latency_share * r.latency_s - steps(kind, ranks) * hop_latency_s);
  return t;
}

} // namespace memwall

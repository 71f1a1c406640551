// `bulk_ring`: the ring's bandwidth term in one phase: n concurrent flows of
// 2(n-1)/n * S each (all-reduce), followed by the remaining per-step latencies added
// analytically. Same time as `ring` when nothing else shares its links, in one phase
// instead of 2(n-1); under contention its hops run unsynchronised, where `ring` makes
// every step wait for the slowest hop.
#include "sim/collective/RingSteps.hpp"

namespace memwall {
namespace {

class BulkRingCollective : public CollectiveAlgorithm {
public:
  std::vector<CollectivePhase> plan(const CollectiveRequest& r) const override
  {
    const auto& g = *r.group;
    size_t n      = g.size();
    std::vector<CollectivePhase> phases;
    if (n < 2)
      return phases;
    if (r.kind == CollectiveKind::send_recv || r.kind == CollectiveKind::all_to_all)
      return collective_registry().make("ring")->plan(r);
    double hop = 0;
    for (size_t k = 0; k < n; ++k)
      hop = std::max(hop, r.latency(g[k], g[(k + 1) % n]));
    append_bulk_steps(phases, {g}, ring_steps(r.kind, n), ring_chunk(r.kind, n, r.bytes), hop);
    return phases;
  }
};

const bool registered = collective_registry().add(
    "bulk_ring", "ring bandwidth term as n concurrent flows, latencies added analytically; for many nodes",
    [] { return std::make_unique<BulkRingCollective>(); });

} // namespace
} // namespace memwall

// `ring`: the textbook ring as dependent chunk steps. An all-reduce of S bytes over n
// GPUs is 2(n-1) steps of S/n; each step costs S/(nB) + its route latency, so the whole
// takes 2(n-1)/n * S/B + 2(n-1) latencies (Patarasuk & Yuan 2009), and the steps share
// links with whatever else runs. Exact: one phase of n flows repeated 2(n-1) times,
// of which the replay starts only those that can touch a replayed node (a 384-GPU ring
// step: 9 flows). all_to_all is one phase of flows (all_to_all_phase); send_recv one flow.
#include "sim/collective/RingSteps.hpp"

namespace memwall {
namespace {

class RingCollective : public CollectiveAlgorithm {
public:
  std::vector<CollectivePhase> plan(const CollectiveRequest& r) const override
  {
    const auto& g = *r.group;
    size_t n      = g.size();
    std::vector<CollectivePhase> phases;
    if (n < 2)
      return phases;
    if (r.kind == CollectiveKind::send_recv) {
      phases.push_back({{{g[0], g[1], r.bytes}}, 0});
      return phases;
    }
    if (r.kind == CollectiveKind::all_to_all) {
      phases.push_back(all_to_all_phase(g, r.bytes, r.switched_nodes));
      return phases;
    }
    CollectivePhase step = ring_step(g, ring_chunk(r.kind, n, r.bytes));
    step.repeat          = ring_steps(r.kind, n);
    phases.push_back(std::move(step));
    return phases;
  }
};

const bool registered = collective_registry().add(
    "ring", "ring of dependent chunk steps, 2(n-1) steps per all-reduce; a step waits for its slowest hop",
    [] { return std::make_unique<RingCollective>(); });

} // namespace
} // namespace memwall

// `hierarchical`: what NCCL does on multi-rail clusters, in three stages. An all-reduce
// of S over N nodes of g GPUs each:
//   1. reduce-scatter inside every node (bulk ring over NVLink): each GPU holds S/g;
//   2. all-reduce of S/g across nodes among GPUs of the same local rank, each group on
//      its own rail NIC (bulk ring);
//   3. all-gather inside every node.
// Groups that are not N x g rectangles fall back to a bulk ring over all members.
#include "sim/collective/RingSteps.hpp"

#include <algorithm>
#include <map>

namespace memwall {
namespace {

class HierarchicalCollective : public CollectiveAlgorithm {
public:
  std::vector<CollectivePhase> plan(const CollectiveRequest& r) const override
  {
    const auto& g = *r.group;
    std::map<int, std::vector<DeviceRef>> by_node;
    for (const auto& d : g)
      by_node[d.node].push_back(d);
    size_t local     = by_node.begin()->second.size();
    bool rectangular = true;
    for (const auto& [node, members] : by_node)
      rectangular = rectangular && members.size() == local;
    if (by_node.size() == 1)
      return collective_registry().make("bulk_ring")->plan(r);
    if (!rectangular || (r.kind != CollectiveKind::all_reduce && r.kind != CollectiveKind::all_gather &&
                         r.kind != CollectiveKind::reduce_scatter))
      return collective_registry().make("bulk_ring")->plan(r);

    std::vector<std::vector<DeviceRef>> intra, rails(local);
    for (const auto& [node, members] : by_node) {
      intra.push_back(members);
      for (size_t i = 0; i < local; ++i)
        rails[i].push_back(members[i]);
    }
    std::vector<CollectivePhase> phases;
    bool scatter     = r.kind != CollectiveKind::all_gather;
    bool gather      = r.kind != CollectiveKind::reduce_scatter;
    double shard     = r.bytes / static_cast<double>(local);
    double intra_hop = local > 1 ? r.latency(intra[0][0], intra[0][1]) : 0.0;
    int intra_steps  = static_cast<int>(local) - 1;
    if (scatter)
      append_bulk_steps(phases, intra, intra_steps, shard, intra_hop);
    // Across nodes: every rail runs a bulk ring of the shard at the same time.
    size_t nodes = by_node.size();
    int steps    = ring_steps(r.kind, nodes);
    phases.push_back(ring_step(rails, steps * shard / static_cast<double>(nodes)));
    // A ring's step ends when its slowest hop does: the latency of the route that climbs
    // highest (a Clos's tiers: the hops between pods, not the first pair's in one rack).
    double hop = 0;
    for (size_t m = 0; m < nodes; ++m)
      hop = std::max(hop, r.latency(rails[0][m], rails[0][(m + 1) % nodes]));
    if (steps > 1 && hop > 0)
      phases.push_back({{}, (steps - 1) * hop});
    if (gather)
      append_bulk_steps(phases, intra, intra_steps, shard, intra_hop);
    return phases;
  }
};

const bool registered = collective_registry().add(
    "hierarchical", "reduce-scatter in each node, bulk ring per rail across nodes, all-gather in each node",
    [] { return std::make_unique<HierarchicalCollective>(); });

class AutoCollective : public CollectiveAlgorithm {
public:
  std::vector<CollectivePhase> plan(const CollectiveRequest& r) const override
  {
    int first = r.group->front().node;
    for (const auto& d : *r.group)
      if (d.node != first)
        return collective_registry().make("hierarchical")->plan(r);
    return collective_registry().make("bulk_ring")->plan(r);
  }
};

const bool registered_auto = collective_registry().add("auto", "bulk ring within a node, hierarchical across nodes",
                                                       [] { return std::make_unique<AutoCollective>(); });

} // namespace
} // namespace memwall

// `nccl`: a collective across nodes (or inside one where NCCL picks NVLink SHARP) takes the time NCCL's own tuning model gives the
// algorithm and protocol it picks (NcclTuning.hpp): its latency (a ring's step per rank,
// a tree's per level) and then its bandwidth term. The bandwidth term runs as flows on
// the real links, so that other traffic and an oversubscribed fabric slow it: every
// GPU sends its bus share of the buffer (2(n-1)/n S for an all-reduce, (n-1)/n S for a
// gather or scatter) split as NCCL's channels split it, 1/k of it through its own NIC to
// the same GPU of the next node and the rest over NVLink to the next GPU of its node (k
// ranks a node); the bytes are scaled so that, alone on the fabric, the flows last what
// NCCL's bandwidth term says. Inside one node the GPU profile's measured NCCL rings time
// the rest (`auto`'s plans, CollectiveTiming), and all-to-all and send/receive
// (point-to-point in NCCL, outside its tuning model) run as `auto` runs them.
#include "sim/collective/NcclTopology.hpp"
#include "sim/collective/RingSteps.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace memwall {
namespace {

// Bytes each rank sends per byte of the buffer (nccl-tests' bus bandwidth factor).
double bus_share(CollectiveKind kind, size_t n) { return ring_steps(kind, n) / static_cast<double>(n); }

// The bus traffic of `group` on its nodes (see the file comment).
CollectivePhase bus_traffic(const std::vector<DeviceRef>& group, CollectiveKind kind, double bytes)
{
  std::map<int, std::vector<DeviceRef>> by_node;
  for (const DeviceRef& d : group)
    by_node[d.node].push_back(d);
  std::vector<std::vector<DeviceRef>> nodes;
  for (auto& [node, members] : by_node)
    nodes.push_back(std::move(members));
  const size_t k   = nodes[0].size();
  bool rectangular = true;
  for (const auto& members : nodes)
    rectangular = rectangular && members.size() == k;
  const double share = bus_share(kind, group.size()) * bytes;
  if (!rectangular)
    return ring_step(group, share);
  CollectivePhase p;
  for (size_t m = 0; m < nodes.size(); ++m)
    for (size_t i = 0; i < k; ++i) {
      if (nodes.size() > 1)
        p.flows.push_back({nodes[m][i], nodes[(m + 1) % nodes.size()][i], share / static_cast<double>(k)});
      if (k > 1)
        p.flows.push_back({nodes[m][i], nodes[m][(i + 1) % k], share * static_cast<double>(k - 1) / k});
    }
  return p;
}

class NcclCollective : public CollectiveAlgorithm {
public:
  std::vector<CollectivePhase> plan(const CollectiveRequest& r) const override
  {
    std::optional<NcclCost> cost = modelled(r);
    if (!cost)
      return fallback_->plan(r);
    CollectivePhase traffic = bus_traffic(*r.group, r.kind, r.bytes);
    // The flows' time alone: the most any link carries of them over its bandwidth
    // (GPUs sharing a NIC or a PCIe switch queue on it). NCCL's model prices a
    // non-blocking fabric, so the fabric's links beyond the NICs are left out: where
    // they are narrower (oversubscribed), the scaled flows run longer on them.
    std::unordered_map<int, double> load;
    double alone = 0, hop = 0;
    for (const Flow& f : traffic.flows) {
      for (int l : r.links(f.src, f.dst))
        if (!r.fabric_link || !r.fabric_link(l))
          load[l] += f.bytes;
      hop = std::max(hop, r.latency(f.src, f.dst));
    }
    for (const auto& [l, bytes] : load)
      alone = std::max(alone, bytes / r.link_bandwidth(l));
    double scale = alone > 0 ? r.bytes / cost->bandwidth / alone : 1.0;
    for (Flow& f : traffic.flows)
      f.bytes *= scale;
    std::vector<CollectivePhase> phases;
    if (cost->latency_s > hop) // the flows pay one route latency themselves
      phases.push_back({{}, cost->latency_s - hop});
    phases.push_back(std::move(traffic));
    return phases;
  }

  bool measured_inside_node(const CollectiveRequest& r) const override { return !modelled(r); }

private:
  // NCCL's cost where memwall times the collective by it: across nodes; inside one node
  // where NCCL picks NVLink SHARP, or the GPU's profile measured no NCCL curve for the
  // group (elsewhere inside a node the profile's measured rings time it).
  static std::optional<NcclCost> modelled(const CollectiveRequest& r)
  {
    const auto& g = *r.group;
    bool kind     = r.kind == CollectiveKind::all_reduce || r.kind == CollectiveKind::all_gather ||
                r.kind == CollectiveKind::reduce_scatter;
    // A GPU that is no CUDA device runs RCCL, whose tuning differs: `auto`.
    if (g.size() < 2 || !kind || !r.cluster || r.bytes <= 0 || r.cluster->node.gpu.compute_capability == 0)
      return std::nullopt;
    NcclCost cost = nccl_choice(nccl_comm(*r.cluster, g), r.kind, r.bytes);
    if (cost.time_s < 0)
      return std::nullopt;
    bool one_node      = std::all_of(g.begin(), g.end(), [&](const DeviceRef& d) { return d.node == g.front().node; });
    const GpuSpec& gpu = r.cluster->node.gpu;
    int n              = static_cast<int>(g.size());
    bool measured      = gpu.profile && gpu.profile->collective("all_reduce", n, n);
    if (one_node && measured && cost.algo != NcclAlgo::nvls)
      return std::nullopt;
    return cost;
  }

  std::unique_ptr<CollectiveAlgorithm> fallback_ = collective_registry().make("auto");
};

const bool registered = collective_registry().add(
    "nccl",
    "NCCL 2.23's tuning model picks ring, tree, NVLS, NVLS tree or PAT and a protocol and sets latency and "
    "bandwidth, the bytes run on the links; rings inside a node as `auto` with the measured curves (default)",
    [] { return std::make_unique<NcclCollective>(); });

} // namespace
} // namespace memwall

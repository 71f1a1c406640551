// `deepep` (DeepEP's normal kernels, DeepSeek-V3 §3.2.2): a token is sent across nodes
// once per node holding one of its experts, to the rank of the same local index there,
// which forwards it over NVLink to the experts' ranks; the combine sums a node's
// outputs before they cross back. Two hops:
//
//   ep       an all-to-all over the ep group of tokens x M rows (M: the nodes a token
//            touches), so (n - 1) / n of them cross nodes: the deduplicated RDMA volume;
//   ep_node  an all-to-all among the node's ep ranks of the received token-expert pairs.
//
// M for k experts of E spread evenly over n nodes, as E / n per node:
//   M = n (1 - C(E - E/n, k) / C(E, k))      (the nodes some expert lands on);
// with group-limited routing (G groups, each token picking g of them, whole groups per
// node) the same over groups: M = n (1 - C(G - G/n, g) / C(G, g)); DeepSeek-V3, 8 groups
// on 8 nodes, g = 4: M = 4, where the alltoall dispatcher sends 8 x 7/8 = 7 rows across.
// Inside one node it is the alltoall dispatcher. Toward the experts in FP8 when they
// compute in FP8 (DeepSeek-V3 §3.3.2; DeepEP's FP8 dispatch), back in 16 bits.
#include "workloads/training/dispatch/TokenDispatcher.hpp"

#include <algorithm>

namespace memwall {
namespace {

// n (1 - C(U - U/n, p) / C(U, p)): nodes touched when p of U units, U/n per node, are picked.
double nodes_touched(double units, double per_node, double picked, double nodes)
{
  double none_here = 1;
  for (double i = 0; i < picked; ++i)
    none_here *= std::max(units - per_node - i, 0.0) / (units - i);
  return nodes * (1 - none_here);
}

class DeepEpDispatcher : public TokenDispatcher {
public:
  std::vector<DispatchHop> hops(const DispatchShape& s) const override
  {
    const double pairs = s.tokens * s.busiest_pairs, out = s.fp8_row_bytes / s.row_bytes;
    if (s.ep_nodes <= 1)
      return {{DispatchGroup::ep, pairs * s.row_bytes, pairs * s.fp8_row_bytes}};
    const MoeSpec& m = s.moe;
    const double n = static_cast<double>(s.ep_nodes), k = static_cast<double>(m.top_k);
    double touched = nodes_touched(static_cast<double>(m.experts), static_cast<double>(m.experts) / n, k, n);
    if (m.expert_groups > 0 && m.expert_groups % s.ep_nodes == 0) {
      double G = static_cast<double>(m.expert_groups);
      touched  = nodes_touched(G, G / n, static_cast<double>(m.groups_per_token), n);
    }
    // Uneven routing loads the busiest rank's node in proportion.
    const double rows = s.tokens * touched * (s.busiest_pairs / k) * s.row_bytes;
    std::vector<DispatchHop> h{{DispatchGroup::ep, rows, rows * out}};
    if (s.ep > s.ep_nodes) // more than one ep rank per node: forward over NVLink
      h.push_back({DispatchGroup::ep_node, pairs * s.row_bytes, pairs * s.fp8_row_bytes});
    return h;
  }
};

const bool registered = token_dispatcher_registry().add(
    "deepep", "a token crosses to each node holding its experts once, then NVLink to them (DeepEP)",
    [](ParamReader&) { return std::make_unique<DeepEpDispatcher>(); });

} // namespace
} // namespace memwall

#pragma once
// How the tokens of an expert-parallel group spread over its ranks' experts. The
// all-to-alls wait for every rank, so the busiest rank sets an MoE layer's pace: the
// one holding the hottest expert.
//
// Per token of a rank, the group's ep ranks route ep x top_k token-expert pairs. The
// hottest expert is sent hot_expert_tokens x ep of them (default: an even top_k /
// experts share), the other experts share the rest evenly. With a capacity factor c an
// expert takes at most c x ep x top_k / experts pairs and drops the rest (Fedus et al.
// 2022, §2.1); dropless routing (c = 0) computes them all.
#include "workloads/model/ModelSpec.hpp"

#include <cstdint>
#include <string>

namespace memwall {

struct ExpertLoad {
  double local_experts = 0; // routed experts each rank holds: experts / ep
  double busiest_pairs = 0; // pairs the busiest rank computes, per token of a rank (top_k when even)
  double busiest_share = 0; // the same as a multiple of an even share: busiest_pairs / top_k
  double dropped_share = 0; // share of all pairs dropped by the capacity limit
};

// `even_only`: routed evenly whatever hot_expert_tokens and capacity_factor say (serving,
// where they do not apply).
ExpertLoad expert_load(const MoeSpec& moe, int64_t ep, bool even_only = false);

// "experts 256 routed, top 8, +1 shared; 4 per GPU on ep 64; busiest GPU 1.00x an even
// share, no tokens dropped": the routing a run assumes, for its title. Serving routes
// evenly (`even_only`: hot_expert_tokens and capacity_factor apply to training).
std::string describe_expert_load(const MoeSpec& moe, int64_t ep, bool even_only = false);

} // namespace memwall

#include "ExpertLoad.hpp"

#include <algorithm>

namespace memwall {

ExpertLoad expert_load(const MoeSpec& moe, int64_t ep)
{
  ExpertLoad l;
  const double E = static_cast<double>(moe.experts), k = static_cast<double>(moe.top_k), n = static_cast<double>(ep);
  l.local_experts = E / n;
  const double pairs = n * k; // routed by the group, per token of a rank
  const double even  = k / E;
  const double hot   = (moe.hot_expert_tokens > 0 ? moe.hot_expert_tokens : even) * n;
  const double other = E > 1 ? (pairs - hot) / (E - 1) : 0.0;
  const double cap   = moe.capacity_factor > 0 ? moe.capacity_factor * pairs / E : hot + other;
  const double hot_kept = std::min(hot, cap), other_kept = std::min(other, cap);
  l.busiest_pairs = hot_kept + (l.local_experts - 1) * other_kept;
  l.dropped_share = ((hot - hot_kept) + (E - 1) * (other - other_kept)) / pairs;
  return l;
}

} // namespace memwall

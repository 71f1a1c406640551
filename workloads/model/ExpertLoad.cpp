#include "workloads/model/ExpertLoad.hpp"

#include <algorithm>
#include <cstdio>

namespace memwall {

ExpertLoad expert_load(const MoeSpec& given, int64_t ep, bool even_only)
{
  MoeSpec moe = given;
  if (even_only)
    moe.hot_expert_tokens = moe.capacity_factor = 0;
  ExpertLoad l;
  const double E = static_cast<double>(moe.experts), k = static_cast<double>(moe.top_k), n = static_cast<double>(ep);
  l.local_experts       = E / n;
  const double pairs    = n * k; // routed by the group, per token of a rank
  const double even     = k / E;
  const double hot      = (moe.hot_expert_tokens > 0 ? moe.hot_expert_tokens : even) * n;
  const double other    = E > 1 ? (pairs - hot) / (E - 1) : 0.0;
  const double cap      = moe.capacity_factor > 0 ? moe.capacity_factor * pairs / E : hot + other;
  const double hot_kept = std::min(hot, cap), other_kept = std::min(other, cap);
  l.busiest_pairs = hot_kept + (l.local_experts - 1) * other_kept;
  l.busiest_share = l.busiest_pairs / k;
  l.dropped_share = ((hot - hot_kept) + (E - 1) * (other - other_kept)) / pairs;
  return l;
}

std::string describe_expert_load(const MoeSpec& moe, int64_t ep, bool even_only)
{
  ExpertLoad l = expert_load(moe, ep, even_only);
  char head[160], busiest[64], dropped[64];
  std::snprintf(head, sizeof head, "experts %lld routed, top %lld%s; %g per GPU on ep %lld; ",
                static_cast<long long>(moe.experts), static_cast<long long>(moe.top_k),
                moe.shared_experts > 0 ? ", with shared experts" : "", l.local_experts, static_cast<long long>(ep));
  if (even_only)
    return std::string(head) + "routed evenly";
  std::snprintf(busiest, sizeof busiest, "busiest GPU %.2fx an even share, ", l.busiest_share);
  std::snprintf(dropped, sizeof dropped, "%.1f %% of token-expert pairs dropped", l.dropped_share * 100);
  return std::string(head) + busiest + (l.dropped_share > 0 ? dropped : "no tokens dropped");
}

} // namespace memwall

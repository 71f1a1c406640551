#include "workloads/inference/kv/KvManager.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {

KvManager::KvManager(ParamReader& r)
{
  swaps_      = r.choice("preemption", "recompute", {"recompute", "swap"},
                         "when KV runs out: drop and recompute a sequence, or swap its KV to host memory") == "swap";
  swap_space_ = r.quantity("swap_space", QuantityKind::bytes, 4.0 * (1ull << 30), "host memory for swapped KV per GPU");
}

int64_t KvManager::held(int64_t tokens, int64_t granule) const
{
  auto round_up = [&](int64_t n) { return (n + granule - 1) / granule * granule; };
  int64_t all   = round_up(tokens);
  if (p_.windowed_share <= 0 || p_.window <= 0)
    return all;
  int64_t kept = std::min(all, round_up(p_.window) + (granule > 1 ? granule : 0));
  return all - static_cast<int64_t>(std::floor(p_.windowed_share * static_cast<double>(all - kept)));
}

int64_t KvManager::stored_tokens(const ServingState& st) const
{
  int64_t n = 0;
  for (int s : st.running)
    n += held(st.seqs[s].computed);
  return n;
}

Registry<KvManagerFactory>& kv_manager_registry()
{
  static Registry<KvManagerFactory> registry("KV manager", "inference.kv_manager", "kv-managers", "paged", "inference");
  return registry;
}

} // namespace memwall

#include "KvManager.hpp"

namespace memwall {

int64_t KvManager::stored_tokens(const ServingState& st) const
{
  int64_t n = 0;
  for (int s : st.running)
    n += st.seqs[s].computed;
  return n;
}

Registry<KvManagerFactory>& kv_manager_registry()
{
  static Registry<KvManagerFactory> registry("KV manager", "inference.kv_manager", "kv-managers");
  return registry;
}

} // namespace memwall

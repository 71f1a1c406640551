#include "KvManager.hpp"

#include "ParamReader.hpp"

namespace memwall {

int64_t KvManager::stored_tokens(const ServingState& st) const
{
  int64_t n = 0;
  for (int s : st.running)
    n += st.seqs[s].computed;
  return n;
}

std::map<std::string, KvManagerInfo>& kv_manager_registry()
{
  static std::map<std::string, KvManagerInfo> registry;
  return registry;
}

bool register_kv_manager(const std::string& name, const std::string& description, KvManagerFactory make)
{
  kv_manager_registry()[name] = {description, std::move(make)};
  return true;
}

std::unique_ptr<KvManager> make_kv_manager(const std::string& name, const KvManagerParams& p)
{
  auto& reg = kv_manager_registry();
  auto it   = reg.find(name);
  if (it == reg.end()) {
    std::vector<std::string> names;
    for (const auto& [n, info] : reg)
      names.push_back(n);
    throw_unknown_preset("KV manager", name, names, "inference.kv_manager", "kv-managers");
  }
  return it->second.make(p);
}

} // namespace memwall

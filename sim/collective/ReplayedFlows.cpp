#include "ReplayedFlows.hpp"

#include <numeric>
#include <unordered_map>

namespace memwall {
namespace {

// Union-find over link ids: the flows of a phase that share links form components.
class LinkComponents {
public:
  int find(int l)
  {
    auto [it, fresh] = parent_.try_emplace(l, l);
    if (fresh || it->second == l)
      return l;
    int root   = find(it->second);
    parent_[l] = root;
    return root;
  }
  void unite(int a, int b) { parent_[find(a)] = find(b); }

private:
  std::unordered_map<int, int> parent_;
};

} // namespace

void keep_replayed_flows(std::vector<Flow>& flows, const std::set<int>& replayed_nodes, const FlowLinks& links_of)
{
  auto touches_replayed = [&](const Flow& f) {
    return replayed_nodes.count(f.src.node) > 0 || replayed_nodes.count(f.dst.node) > 0;
  };
  bool all = true;
  for (const Flow& f : flows)
    all = all && touches_replayed(f);
  if (all)
    return;
  LinkComponents parts;
  for (const Flow& f : flows) {
    const std::vector<int>& links = links_of(f);
    for (size_t i = 1; i < links.size(); ++i)
      parts.unite(links[i], links[0]);
  }
  std::set<int> watched; // components holding a replayed node's flow
  for (const Flow& f : flows)
    if (touches_replayed(f) && !links_of(f).empty())
      watched.insert(parts.find(links_of(f)[0]));
  std::vector<Flow> kept;
  for (const Flow& f : flows) {
    const std::vector<int>& links = links_of(f);
    if (touches_replayed(f) || (!links.empty() && watched.count(parts.find(links[0]))))
      kept.push_back(f);
  }
  flows = std::move(kept);
}

} // namespace memwall

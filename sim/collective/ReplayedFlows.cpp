#include "ReplayedFlows.hpp"

#include <algorithm>
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
  if (std::all_of(flows.begin(), flows.end(), touches_replayed))
    return;
  // Each flow's route once (links_of may add routes, so keep ids, not references); a
  // flow's component is that of its first link, -1 for a flow on no link.
  LinkComponents parts;
  std::vector<int> first_link;
  first_link.reserve(flows.size());
  for (const Flow& f : flows) {
    const std::vector<int>& links = links_of(f);
    for (size_t i = 1; i < links.size(); ++i)
      parts.unite(links[i], links[0]);
    first_link.push_back(links.empty() ? -1 : links[0]);
  }
  auto component = [&](size_t i) { return first_link[i] < 0 ? -1 : parts.find(first_link[i]); };
  std::set<int> watched; // components holding a replayed node's flow
  for (size_t i = 0; i < flows.size(); ++i)
    if (touches_replayed(flows[i]) && first_link[i] >= 0)
      watched.insert(component(i));
  std::vector<Flow> kept;
  for (size_t i = 0; i < flows.size(); ++i)
    if (touches_replayed(flows[i]) || (first_link[i] >= 0 && watched.count(component(i))))
      kept.push_back(flows[i]);
  flows = std::move(kept);
}

} // namespace memwall

#include "sim/collective/FlowFold.hpp"

namespace memwall {

int FlowFold::find(int link)
{
  auto [it, fresh] = parent_.try_emplace(link, link);
  if (fresh || it->second == link)
    return link;
  int root      = find(it->second);
  parent_[link] = root;
  return root;
}

void FlowFold::add_links(const std::vector<int>& links, bool watched)
{
  roots_ready_ = false;
  if (links.empty())
    return;
  int root = find(links[0]);
  for (size_t i = 1; i < links.size(); ++i) {
    int other = find(links[i]);
    if (other != root)
      parent_[other] = root;
  }
  if (watched)
    watched_links_.push_back(links[0]);
}

bool FlowFold::keeps(const Flow& f, const std::vector<int>& links)
{
  if (touches(f))
    return true;
  if (links.empty())
    return false;
  if (!roots_ready_) {
    watched_roots_.clear();
    for (int l : watched_links_)
      watched_roots_.insert(find(l));
    roots_ready_ = true;
  }
  return watched_roots_.count(find(links[0])) > 0;
}

} // namespace memwall

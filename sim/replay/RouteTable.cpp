#include "sim/replay/RouteTable.hpp"

namespace memwall {

int RouteTable::index(simgrid::s4u::Host* src, simgrid::s4u::Host* dst)
{
  const HostPair key{src, dst};
  CachedRoute& cached = cache_[HostPairHash()(key) & (cache_.size() - 1)];
  if (cached.src == src && cached.dst == dst)
    return cached.route;
  if (auto it = ids_.find(key); it != ids_.end()) {
    cached = {src, dst, it->second};
    return it->second;
  }
  std::vector<simgrid::s4u::Link*> links;
  double latency = 0;
  src->route_to(dst, links, &latency);
  Route route;
  route.latency = latency;
  for (simgrid::s4u::Link* l : links) {
    auto [it, fresh] = link_ids_.try_emplace(l, static_cast<int>(links_.size()));
    if (fresh) {
      links_.push_back(l);
      accounts_.add_link();
    }
    route.links.push_back(it->second);
  }
  routes_.push_back(std::move(route));
  ids_.emplace(key, static_cast<int>(routes_.size() - 1));
  return static_cast<int>(routes_.size() - 1);
}

} // namespace memwall

#pragma once
// The routes between the platform's hosts as SimGrid finds them, each looked up once and
// numbered, and the links they cross, numbered as first met, with what each link
// carried (LinkAccounts). A direct-mapped cache sits in front of the hash map: a step's
// flows use a few hundred pairs of hosts over and over, and a node-based hash map costs
// a cache miss or two per flow.
#include "sim/replay/LinkAccounts.hpp"

#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memwall {

class RouteTable {
public:
  struct Route {
    std::vector<int> links;
    double latency = 0;
  };

  // The number of the route from `src` to `dst`, found on first use.
  int index(simgrid::s4u::Host* src, simgrid::s4u::Host* dst);
  const Route& route(int r) const { return routes_[static_cast<size_t>(r)]; }
  simgrid::s4u::Link* link(int l) const { return links_[static_cast<size_t>(l)]; }
  size_t link_count() const { return links_.size(); }
  LinkAccounts& accounts() { return accounts_; }
  const LinkAccounts& accounts() const { return accounts_; }

private:
  using HostPair = std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>;
  // Only ever found, never walked: hashed, not ordered.
  struct HostPairHash {
    size_t operator()(const HostPair& p) const
    {
      // Pointers share their low and high bits: mix them (identity hashes chained long).
      uint64_t h = reinterpret_cast<uintptr_t>(p.first) * 0x9E3779B97F4A7C15ull;
      h ^= reinterpret_cast<uintptr_t>(p.second) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  struct CachedRoute {
    simgrid::s4u::Host *src = nullptr, *dst = nullptr;
    int route = -1;
  };

  std::vector<CachedRoute> cache_ = std::vector<CachedRoute>(4096);
  std::unordered_map<HostPair, int, HostPairHash> ids_;
  std::vector<Route> routes_;
  std::vector<simgrid::s4u::Link*> links_;
  std::map<simgrid::s4u::Link*, int> link_ids_;
  LinkAccounts accounts_;
};

} // namespace memwall

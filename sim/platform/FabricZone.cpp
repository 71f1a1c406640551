#include "sim/platform/FabricZone.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <stdexcept>

namespace memwall {

void FabricZone::set_places(int places)
{
  places_ = places;
  shapes_.assign(static_cast<size_t>(places) * static_cast<size_t>(places), Shape{});
}

void FabricZone::set_route(int from, int to, const std::vector<simgrid::s4u::Link*>& first_node_links)
{
  if (from < 0 || to < 0 || from >= places_ || to >= places_)
    throw std::logic_error("FabricZone::set_route: no such place");
  Shape& s  = shapes_[static_cast<size_t>(from * places_ + to)];
  s.defined = true;
  s.slots.clear();
  for (const simgrid::s4u::Link* l : first_node_links)
    s.slots.push_back(slot_of(l));
}

void FabricZone::set_fabric(int gateway, const simgrid::s4u::Link* up, const simgrid::s4u::Link* down)
{
  gateway_   = gateway;
  up_slot_   = slot_of(up);
  down_slot_ = slot_of(down);
}

void FabricZone::add_tier(int nodes_per_group, const std::vector<simgrid::s4u::Link*>& ups,
                          const std::vector<simgrid::s4u::Link*>& downs)
{
  if (nodes_per_group < 1 || ups.size() != downs.size() ||
      (!tiers_.empty() && nodes_per_group % tiers_.back().nodes != 0))
    throw std::logic_error("FabricZone::add_tier: groups must nest, one up and one down link each");
  Tier& t = tiers_.emplace_back();
  t.nodes = nodes_per_group;
  for (size_t g = 0; g < ups.size(); ++g) {
    t.up.push_back(ref(ups[g]));
    t.down.push_back(ref(downs[g]));
  }
}

void FabricZone::set_rails(const std::vector<int>& rail_of_place) { rails_ = rail_of_place; }

int FabricZone::tiers_climbed(int node_a, int place_a, int node_b, int place_b) const
{
  size_t t = 0;
  if (!rails_.empty()) {
    int ra = rails_[static_cast<size_t>(place_a)], rb = rails_[static_cast<size_t>(place_b)];
    if (ra >= 0 && rb >= 0 && ra != rb)
      t = 1; // one leaf a rail: different rails meet in the layer above the first tier
  }
  while (t < tiers_.size() && node_a / tiers_[t].nodes != node_b / tiers_[t].nodes)
    ++t;
  return static_cast<int>(std::min(t, tiers_.size()));
}

int FabricZone::slot_of(const simgrid::s4u::Link* first_node_link) const
{
  // A few dozen links a node, a few hundred routes: found by looking.
  if (!node_links_.empty())
    for (size_t k = 0; k < node_links_[0].size(); ++k)
      if (node_links_[0][k].impl == first_node_link->get_impl())
        return static_cast<int>(k);
  throw std::logic_error("FabricZone: link " + first_node_link->get_name() + " is not the first node's");
}

void FabricZone::create_loopback()
{
  namespace sg4 = simgrid::s4u;
  loopback_     = ref(get_iface()
                          ->create_link("__loopback__", simgrid::config::get_value<double>("network/loopback-bw"))
                          ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                          ->set_latency(simgrid::config::get_value<double>("network/loopback-lat"))
                          ->seal());
}

int FabricZone::add_node(const std::vector<simgrid::s4u::Link*>& links)
{
  std::vector<LinkRef>& refs = node_links_.emplace_back();
  refs.reserve(links.size());
  for (const simgrid::s4u::Link* l : links)
    refs.push_back(ref(l));
  return static_cast<int>(node_links_.size() - 1);
}

void FabricZone::place(const simgrid::s4u::Host* host, int node, int place)
{
  size_t id = host->get_netpoint()->id();
  if (id >= where_.size())
    where_.resize(id + 1);
  where_[id] = {node, place};
}

void FabricZone::append(int node, int from, int to, std::vector<simgrid::kernel::resource::StandardLinkImpl*>& links,
                        double* latency) const
{
  const Shape& s = shape(from, to);
  if (!s.defined) {
    if (from == to && loopback_.impl) { // a full zone's loopback
      links.push_back(loopback_.impl);
      if (latency)
        *latency += loopback_.latency;
    }
    return;
  }
  const std::vector<LinkRef>& own = node_links_[static_cast<size_t>(node)];
  for (int slot : s.slots) {
    const LinkRef& l = own[static_cast<size_t>(slot)];
    links.push_back(l.impl);
    if (latency)
      *latency += l.latency;
  }
}

void FabricZone::get_local_route(const simgrid::kernel::routing::NetPoint* src,
                                 const simgrid::kernel::routing::NetPoint* dst, simgrid::kernel::routing::Route* into,
                                 double* latency)
{
  Where a = src->id() < where_.size() ? where_[src->id()] : Where{};
  Where b = dst->id() < where_.size() ? where_[dst->id()] : Where{};
  if (a.node < 0 || b.node < 0) // a timer host: it runs delays and routes nowhere
    throw std::logic_error("FabricZone: no route from " + src->get_name() + " to " + dst->get_name());
  std::vector<simgrid::kernel::resource::StandardLinkImpl*>& links = into->link_list_;
  if (a.node == b.node) {
    append(a.node, a.place, b.place, links, latency);
    return;
  }
  if (gateway_ < 0)
    throw std::logic_error("FabricZone: nodes " + std::to_string(a.node) + " and " + std::to_string(b.node) +
                           " are not connected");
  // The order of SimGrid's star of full zones: the star's links' latencies first, then
  // the source node's route to its gateway; the links in route order.
  const LinkRef& up   = node_links_[static_cast<size_t>(a.node)][static_cast<size_t>(up_slot_)];
  const LinkRef& down = node_links_[static_cast<size_t>(b.node)][static_cast<size_t>(down_slot_)];
  int climbed         = tiers_.empty() ? 0 : tiers_climbed(a.node, a.place, b.node, b.place);
  if (latency) {
    *latency += up.latency;
    for (int t = 0; t < climbed; ++t) {
      const Tier& tier = tiers_[static_cast<size_t>(t)];
      *latency += tier.up[static_cast<size_t>(a.node / tier.nodes)].latency;
      *latency += tier.down[static_cast<size_t>(b.node / tier.nodes)].latency;
    }
    *latency += down.latency;
  }
  append(a.node, a.place, gateway_, links, latency);
  links.push_back(up.impl);
  for (int t = 0; t < climbed; ++t) {
    const Tier& tier = tiers_[static_cast<size_t>(t)];
    links.push_back(tier.up[static_cast<size_t>(a.node / tier.nodes)].impl);
  }
  for (int t = climbed - 1; t >= 0; --t) {
    const Tier& tier = tiers_[static_cast<size_t>(t)];
    links.push_back(tier.down[static_cast<size_t>(b.node / tier.nodes)].impl);
  }
  links.push_back(down.impl);
  append(b.node, gateway_, b.place, links, latency);
}

} // namespace memwall

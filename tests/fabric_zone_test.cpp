// FabricZone (sim/platform/FabricZone.hpp) against what it replaces: SimGrid 3.32's own star
// of full zones, one per node, built with the same links and routes in another process.
// A flow's latency is also its sharing weight in CM02, so the routes must agree link for
// link and their latencies bit for bit. The latencies are picked so that the order of
// the sum shows.
#include "base/ChildPool.hpp"
#include "sim/platform/FabricZone.hpp"
#include "sim/Simulation.hpp"

#include <catch2/catch.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace memwall;
namespace sg4 = simgrid::s4u;

namespace {

constexpr int nodes = 3;
// A node: hosts h0 and h1, a gateway; h0 -> h1 over a.up, b.down; each host reaches the
// gateway over its own link; the fabric over the node's ib links. h1 has no route to
// itself: it crosses SimGrid's loopback.
struct NodeLinks {
  sg4::Link *self, *a_up, *a_down, *b_up, *b_down, *ib_up, *ib_down;
};

NodeLinks make_links(sg4::NetZone* z, int n)
{
  auto link = [&](const std::string& name, double latency) {
    return z->create_link("n" + std::to_string(n) + "." + name, 1e9)->set_latency(latency)->seal();
  };
  return {link("self", 0.5),   link("a.up", 0.1),  link("a.down", 0.17), link("b.up", 0.11),
          link("b.down", 0.7), link("ib.up", 0.2), link("ib.down", 0.3)};
}

// Every ordered pair of hosts: its links' names and its latency, to the last bit.
std::string describe_routes(const std::vector<sg4::Host*>& hosts)
{
  std::string out;
  for (sg4::Host* a : hosts)
    for (sg4::Host* b : hosts) {
      std::vector<sg4::Link*> links;
      double latency = 0;
      a->route_to(b, links, &latency);
      out += a->get_name() + " -> " + b->get_name() + ":";
      for (const sg4::Link* l : links)
        out += " " + l->get_name();
      char bits[64];
      std::snprintf(bits, sizeof bits, " (%a s)\n", latency);
      out += bits;
    }
  return out;
}

std::string routes_in_child(const std::function<std::string()>& build)
{
  ChildOutcome out = run_in_child([&] {
    start_engine();
    return build();
  });
  INFO(out.data);
  REQUIRE(out.kind == ChildOutcome::Kind::result);
  return out.data;
}

std::string star_of_full_zones()
{
  auto* star = sg4::create_star_zone("cluster");
  std::vector<NodeLinks> links;
  for (int n = 0; n < nodes; ++n)
    links.push_back(make_links(star, n));
  std::vector<sg4::Host*> hosts;
  for (int n = 0; n < nodes; ++n) {
    const NodeLinks& l = links[n];
    sg4::NetZone* z    = sg4::create_full_zone("node" + std::to_string(n));
    z->set_parent(star);
    sg4::Host* h0 = z->create_host("n" + std::to_string(n) + ".h0", 1);
    sg4::Host* h1 = z->create_host("n" + std::to_string(n) + ".h1", 1);
    auto* gw      = z->create_router("n" + std::to_string(n) + ".gw");
    auto route    = [&](simgrid::kernel::routing::NetPoint* a, simgrid::kernel::routing::NetPoint* b,
                     std::vector<sg4::Link*> ls) {
      z->add_route(a, b, nullptr, nullptr, std::vector<sg4::LinkInRoute>(ls.begin(), ls.end()), false);
    };
    route(h0->get_netpoint(), h0->get_netpoint(), {l.self});
    route(h0->get_netpoint(), h1->get_netpoint(), {l.a_up, l.b_down});
    route(h1->get_netpoint(), h0->get_netpoint(), {l.b_up, l.a_down});
    route(h0->get_netpoint(), gw, {l.a_up});
    route(gw, h0->get_netpoint(), {l.a_down});
    route(gw, h1->get_netpoint(), {l.b_down}); // h1 -> gw: none, an empty route
    z->seal();
    star->add_route(z->get_netpoint(), nullptr, gw, nullptr, {sg4::LinkInRoute(l.ib_up)}, false);
    star->add_route(nullptr, z->get_netpoint(), nullptr, gw, {sg4::LinkInRoute(l.ib_down)}, false);
    hosts.push_back(h0);
    hosts.push_back(h1);
  }
  star->seal();
  return describe_routes(hosts);
}

std::string fabric_zone()
{
  auto* fabric    = new FabricZone("cluster");
  sg4::NetZone* z = fabric->get_iface();
  std::vector<NodeLinks> links;
  for (int n = 0; n < nodes; ++n)
    links.push_back(make_links(z, n));
  fabric->create_loopback();
  std::vector<sg4::Host*> hosts;
  for (int n = 0; n < nodes; ++n) {
    const NodeLinks& l = links[n];
    int node           = fabric->add_node({l.self, l.a_up, l.a_down, l.b_up, l.b_down, l.ib_up, l.ib_down});
    for (int k = 0; k < 2; ++k) {
      hosts.push_back(z->create_host("n" + std::to_string(n) + ".h" + std::to_string(k), 1));
      fabric->place(hosts.back(), node, k);
    }
  }
  // Places: h0, h1, the gateway; routes named by node 0's links.
  const NodeLinks& l = links[0];
  fabric->set_places(3);
  fabric->set_route(0, 0, {l.self});
  fabric->set_route(0, 1, {l.a_up, l.b_down});
  fabric->set_route(1, 0, {l.b_up, l.a_down});
  fabric->set_route(0, 2, {l.a_up});
  fabric->set_route(2, 0, {l.a_down});
  fabric->set_route(2, 1, {l.b_down});
  fabric->set_fabric(2, l.ib_up, l.ib_down);
  z->seal();
  return describe_routes(hosts);
}

} // namespace

TEST_CASE("fabric_zone_routes_as_simgrids_star_of_full_zones_link_for_link_and_latency_bit_for_bit", "[platform]")
{
  std::string reference = routes_in_child(star_of_full_zones);
  std::string ours      = routes_in_child(fabric_zone);
  CHECK(ours == reference);
  // By hand: across nodes the source side, the fabric, the destination side; the
  // fabric's latencies summed first: ((0.2 + 0.3) + 0.1) + 0.7 = 1.2999999999999998,
  // 0x1.4ccccccccccccp+0, where the links' order, ((0.1 + 0.2) + 0.3) + 0.7, gives 1.3.
  CHECK(ours.find("n0.h0 -> n1.h1: n0.a.up n0.ib.up n1.ib.down n1.b.down (0x1.4ccccccccccccp+0 s)") !=
        std::string::npos);
  CHECK(((0.2 + 0.3) + 0.1) + 0.7 != ((0.1 + 0.2) + 0.3) + 0.7);
  // h1 has no route to the gateway: across nodes it starts at the fabric.
  CHECK(ours.find("n0.h1 -> n2.h0: n0.ib.up n2.ib.down n2.a.down (") != std::string::npos);
  // No route to itself: the loopback, as a full zone gives it.
  CHECK(ours.find("n1.h1 -> n1.h1: __loopback__ (") != std::string::npos);
}

#pragma once
// The whole cluster as one SimGrid NetZone whose routes are worked out, not stored.
//
// Every node of a cluster has the same inside, so one table of routes between the
// places of a node (GPU i, CPU socket s, the NVMe drive, the gateway to the fabric),
// each route a list of slots into a node's own links, serves every node. A route
// between two nodes is the source's route to its gateway, the source node's fabric
// up-link, the destination node's down-link and the destination gateway's route on:
//
//     node a                                   node b
//   gpu ─pcie.up─nic.up─► gw ─ib.up─► [switch] ─ib.down─► gw ─nic.down─pcie.down─► gpu
//
// With tiers of a Clos above the nodes' switch (NetworkTier), a route between nodes of
// different groups also climbs the source's group links up to the lowest layer that
// joins both and comes down the destination's:
//
//   ... ib.up ─► rack3.up ─► pod0.up ─► [top] ─► pod1.down ─► rack9.down ─► ib.down ...
//
// Why not SimGrid's own zones (a star of full zones, one per node, which gave the same
// routes): they store a route per pair of hosts and, across zones, find a flow's route
// by walking the zone tree at every communication (NetZoneImpl::
// get_global_route_with_netzones: the common ancestor, a set of the zones crossed, a
// local route in each), ~1.2 us a flow, 8 % of the Megatron 1T step; and sealing a
// zone filters every host of the platform, quadratic in nodes. Here the hosts share
// one zone, so SimGrid asks this zone alone.
//
// The links come in the order the star of full zones gave them, and the latency is
// summed in its order too (the fabric's two links first, then the source side, then
// the destination side): a flow's latency is also its sharing weight in CM02, so the
// same sum to the last bit keeps every replay byte-identical. A pair with no route is
// empty, as a full zone left it; a place with no route to itself takes the loopback,
// as a full zone gave it.
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <string>
#include <vector>

namespace memwall {

class FabricZone final : public simgrid::kernel::routing::NetZoneImpl {
public:
  // The first zone made in a process is SimGrid's root: make this one first.
  explicit FabricZone(const std::string& name) : NetZoneImpl(name) {}

  // A node's links, in the same order in every node (a link's place in it is its slot).
  // Returns the node's number.
  int add_node(const std::vector<simgrid::s4u::Link*>& links);
  void place(const simgrid::s4u::Host* host, int node, int place);
  // The places of every node and their routes, named by the first node's links (every
  // node's routes cross its own links in the same slots).
  void set_places(int places);
  void set_route(int from, int to, const std::vector<simgrid::s4u::Link*>& first_node_links);
  // Where the fabric leaves and enters a node: its gateway place and the first node's
  // up and down links. Without it, nodes are not connected.
  void set_fabric(int gateway, const simgrid::s4u::Link* up, const simgrid::s4u::Link* down);
  // A tier of the Clos above the nodes' switch, from the bottom: groups of
  // `nodes_per_group` consecutive nodes, group g leaving by ups[g] and entering by downs[g].
  void add_tier(int nodes_per_group, const std::vector<simgrid::s4u::Link*>& ups,
                const std::vector<simgrid::s4u::Link*>& downs);
  // The rail (the NIC's place among the node's NICs) each place reaches the fabric by,
  // -1 for none. Given, the first tier's leaves are one per rail: places of different
  // rails meet no lower than the layer above the first tier.
  void set_rails(const std::vector<int>& rail_of_place);
  // How many tiers a route from `node_a`'s place `place_a` to `node_b`'s climbs.
  int tiers_climbed(int node_a, int place_a, int node_b, int place_b) const;
  // What a place without a route to itself crosses: a link made as SimGrid makes its
  // loopback (network/loopback-bw and -lat, fat pipe), as a full zone gave it. Before
  // the zone is sealed.
  void create_loopback();

protected:
  void get_local_route(const simgrid::kernel::routing::NetPoint* src, const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

private:
  struct LinkRef {
    simgrid::kernel::resource::StandardLinkImpl* impl = nullptr;
    double latency                                    = 0;
  };
  struct Where {
    int node  = -1;
    int place = -1;
  };
  struct Shape {
    bool defined = false;
    std::vector<int> slots;
  };
  static LinkRef ref(const simgrid::s4u::Link* link) { return {link->get_impl(), link->get_latency()}; }
  const Shape& shape(int from, int to) const { return shapes_[static_cast<size_t>(from * places_ + to)]; }
  int slot_of(const simgrid::s4u::Link* first_node_link) const;
  // Appends the links of `from -> to` inside `node`; adds their latencies in order.
  void append(int node, int from, int to, std::vector<simgrid::kernel::resource::StandardLinkImpl*>& links,
              double* latency) const;

  struct Tier {
    int nodes = 1;
    std::vector<LinkRef> up, down; // by group
  };

  int places_ = 0;
  std::vector<Shape> shapes_; // [from * places_ + to]
  int gateway_ = -1, up_slot_ = -1, down_slot_ = -1;
  std::vector<std::vector<LinkRef>> node_links_;
  std::vector<Where> where_; // by NetPoint id
  LinkRef loopback_;
  std::vector<Tier> tiers_;
  std::vector<int> rails_; // by place; empty: no rails
};

} // namespace memwall

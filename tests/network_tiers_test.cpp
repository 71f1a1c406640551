// The tiers of a Clos fabric (hardware.network.tiers, NetworkTier.hpp): the routes a
// flow takes between nodes, the bandwidth an oversubscribed tier leaves a collective,
// and the spec's refusals. Every figure is a hand count on DGX H100 nodes: 8 NICs of
// 50 GB/s a node, 1 us a switch unless a tier says otherwise.
#include "base/ChildPool.hpp"
#include "sim/Simulation.hpp"
#include "sim/collective/NcclTopology.hpp"
#include "sim/platform/Platform.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <simgrid/s4u.hpp>

#include <cstdio>
#include <string>
#include <vector>

using namespace memwall;
using namespace memwall::test;
namespace sg4 = simgrid::s4u;

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// The links of the route from GPU `ga` of node `a` to GPU `gb` of node `b` that leave the
// nodes (their names), then the route's latency in ns.
std::string fabric_route(const ClusterSpec& c, int a, int ga, int b, int gb)
{
  ChildOutcome out = run_in_child([&] {
    start_engine();
    Platform p(c);
    std::vector<sg4::Link*> links;
    double latency = 0;
    p.host({DeviceKind::gpu, a, ga})->route_to(p.host({DeviceKind::gpu, b, gb}), links, &latency);
    std::string s;
    for (const sg4::Link* l : links)
      if (p.is_fabric_link(l))
        s += l->get_name() + " ";
    char ns[32];
    std::snprintf(ns, sizeof ns, "%.0f ns", latency * 1e9);
    return s + ns;
  });
  INFO(out.data);
  REQUIRE(out.kind == ChildOutcome::Kind::result);
  return out.data;
}

// The replayed time of one all-reduce of `bytes` over every GPU of `nodes` DGX H100s.
double all_reduce_s(int nodes, const std::string& network, double bytes, const std::string& algorithm = "nccl")
{
  return dgx_h100_collective_end_s(CollectiveKind::all_reduce, nodes, bytes, network, algorithm);
}

} // namespace

TEST_CASE("a_route_climbs_only_to_the_lowest_layer_that_joins_its_two_nodes", "[network]")
{
  // Racks of 2 nodes, pods of 4; 8 nodes. A route crosses its leaf (1 us), the route of a
  // node pair inside one rack no tier link; across racks of one pod the racks' links
  // and two more switches (its leaves twice, the pod layer once: +2 us); across pods the
  // pods' links too (+4 us: two leaves, two pod switches, the top).
  ClusterSpec c    = dgx_h100_spec(8, "tiers: [{name: rack, nodes: 2}, {name: pod, nodes: 4}]").cluster;
  std::string rack = fabric_route(c, 0, 0, 1, 0);
  std::string pod  = fabric_route(c, 0, 0, 2, 0);
  std::string far  = fabric_route(c, 0, 0, 5, 0);
  CHECK(rack.rfind("node0.ib.up node1.ib.down ", 0) == 0);
  CHECK(pod.rfind("node0.ib.up rack.0.up rack.1.down node2.ib.down ", 0) == 0);
  CHECK(far.rfind("node0.ib.up rack.0.up pod.0.up pod.1.down rack.2.down node5.ib.down ", 0) == 0);
  auto ns = [](const std::string& route) { return std::stod(route.substr(route.rfind("down ") + 5)); };
  CHECK(ns(pod) - ns(rack) == Approx(2000).margin(1));
  CHECK(ns(far) - ns(rack) == Approx(4000).margin(1));
  // The racks' tier names the latency of the layer above them, 3 us: the route across
  // racks crosses it once (+2 us against 1 us); the pods' tier, unset, takes the same 3 us
  // for the top, so the route across pods crosses 1 + 3 + 3 + 3 + 1 us of switches.
  ClusterSpec slow =
      dgx_h100_spec(8, "tiers: [{name: rack, nodes: 2, switch_latency_s: 3 us}, {name: pod, nodes: 4}]").cluster;
  CHECK(ns(fabric_route(slow, 0, 0, 2, 0)) - ns(pod) == Approx(2000).margin(1));
  CHECK(ns(fabric_route(slow, 0, 0, 5, 0)) - ns(rack) == Approx(10000).margin(1));
}

TEST_CASE("rails_meet_only_above_the_first_tier_where_the_fabric_is_rail_optimised", "[network]")
{
  // A DGX SuperPOD's scalable unit: one leaf a rail for 4 nodes. GPU 0 reaches GPU 0 of a
  // node in its unit through rail 0's leaf; GPU 3 of that node only through the spine.
  ClusterSpec c = dgx_h100_spec(8, "tiers: [{name: su, nodes: 4}], rail_optimized: true").cluster;
  CHECK(fabric_route(c, 0, 0, 1, 0).rfind("node0.ib.up node1.ib.down ", 0) == 0);
  CHECK(fabric_route(c, 0, 0, 1, 3).rfind("node0.ib.up su.0.up su.0.down node1.ib.down ", 0) == 0);
  CHECK(fabric_route(c, 0, 0, 5, 0).rfind("node0.ib.up su.0.up su.1.down node5.ib.down ", 0) == 0);
}

TEST_CASE("an_oversubscribed_switch_slows_a_lone_nccl_all_reduce_by_its_ratio", "[network]")
{
  // Two nodes whose share of the switch is 1/2 of their NICs: each node sends the ring's
  // bus share 2(n-1)/n S through 8 NICs of 50 GB/s but its switch link carries 200 GB/s,
  // so the bandwidth term doubles. NCCL's own cost (its model prices a non-blocking
  // fabric) is latency + S / bw: oversubscribed, latency + 2 S / bw.
  const double S = GiB;
  NcclCost cost  = nccl_choice(nccl_comm(dgx_h100_spec(2, "").cluster, gpu_grid(2, 8)), CollectiveKind::all_reduce, S);
  double flat    = all_reduce_s(2, "", S);
  double halved  = all_reduce_s(2, "oversubscription: 2", S);
  double bandwidth = S / cost.bandwidth;
  CHECK(flat == Approx(cost.time_s).epsilon(0.02));
  CHECK(halved == Approx(cost.latency_s + 2 * bandwidth).epsilon(0.02));
}

TEST_CASE("a_ring_crossing_a_1_to_4_pod_boundary_runs_at_the_pod_links_share", "[network]")
{
  // Four nodes in two pods of two whose up-links carry 1/4 of their NICs: 2 x 400 / 4 =
  // 200 GB/s. The ring's flows cross the boundary twice (node 1 -> 2 and 3 -> 0), each
  // pod's up-link carrying the whole node's bus share, 2x its NICs' time: the bandwidth
  // term doubles. Pods of 4 nodes (the whole ring inside one) cost nothing.
  const double S  = GiB;
  NcclCost cost   = nccl_choice(nccl_comm(dgx_h100_spec(4, "").cluster, gpu_grid(4, 8)), CollectiveKind::all_reduce, S);
  double flat     = all_reduce_s(4, "", S);
  double one_pod  = all_reduce_s(4, "tiers: [{name: pod, nodes: 4, oversubscription: 4}]", S);
  double two_pods = all_reduce_s(4, "tiers: [{name: pod, nodes: 2, oversubscription: 4}]", S);
  CHECK(one_pod == Approx(flat).epsilon(1e-6));
  CHECK(two_pods == Approx(cost.latency_s + 2 * S / cost.bandwidth).epsilon(0.02));
}

TEST_CASE("a_fabrics_tiers_are_refused_where_they_do_not_nest_or_name_a_key_wrongly", "[network][errors]")
{
  auto spec = [](const std::string& network) {
    return "hardware: {node: dgx-h100, nodes: 4, network: {" + network +
           "}}\nmodel: {preset: gpt2}\ntraining: {seq_len: 128, global_batch: 32}\n";
  };
  CHECK_THAT(refused("tiers_map", spec("tiers: {name: pod, nodes: 2}")),
             Catch::Contains("hardware.network.tiers") && Catch::Contains("expected a list"));
  CHECK_THAT(refused("tiers_item", spec("tiers: [pod]")),
             Catch::Contains("hardware.network.tiers[0]") && Catch::Contains("expected a mapping"));
  CHECK_THAT(refused("tiers_nest", spec("tiers: [{name: rack, nodes: 2}, {name: pod, nodes: 3}]")),
             Catch::Contains("hardware.network.tiers[1].nodes") && Catch::Contains("groups nest"));
  CHECK_THAT(refused("tiers_typo", spec("tiers: [{name: pod, nodes: 2, oversubscribtion: 7}]")),
             Catch::Contains("hardware.network.tiers[0].oversubscribtion") && Catch::Contains("oversubscription"));
  CHECK_THAT(refused("tiers_twice", spec("tiers: [{name: pod, nodes: 2}, {name: pod, nodes: 4}]")),
             Catch::Contains("tiers[1].name") && Catch::Contains("names two tiers"));
  CHECK_THAT(refused("tiers_name", spec("tiers: [{name: 'Pod A', nodes: 2}]")),
             Catch::Contains("tiers[0].name") && Catch::Contains("lower-case"));
  CHECK_THAT(refused("tiers_digits", spec("tiers: [{name: '1', nodes: 2}]")),
             Catch::Contains("tiers[0].name") && Catch::Contains("lower-case letter, then"));
  CHECK_THAT(refused("tiers_ratio", spec("tiers: [{name: pod, nodes: 2, oversubscription: 0.5}]")),
             Catch::Contains("tiers[0].oversubscription"));
  CHECK_THAT(refused("tiers_and_flat", spec("oversubscription: 2, tiers: [{name: pod, nodes: 2}]")),
             Catch::Contains("hardware.network.oversubscription") && Catch::Contains("per tier"));
  CHECK_THAT(refused("tiers_and_flat_1", spec("oversubscription: 1, tiers: [{name: pod, nodes: 2}]")),
             Catch::Contains("hardware.network.oversubscription") && Catch::Contains("one or the other"));
  // An item of a list given with --set is named as the --set argument, not a line of the file.
  CHECK_THAT(refused("tiers_set", spec(""), "--set 'hardware.network.tiers=[{name: pod}]'"),
             Catch::Contains("--set hardware.network.tiers[0].nodes"));
  CHECK_THAT(refused("rails_alone", spec("rail_optimized: true")),
             Catch::Contains("hardware.network.rail_optimized") && Catch::Contains("tiers"));
}

TEST_CASE("tiers_whose_names_differ_by_a_digit_keep_their_links_apart", "[network]")
{
  // `rack` group 10 and `rack1` group 0 were both rack10.up to SimGrid, which aborted.
  nlohmann::json run = run_json("clash", "hardware:\n  node: dgx-h100\n  nodes: 12\n  network:\n    tiers: [{name: "
                                         "rack, nodes: 1}, {name: rack1, nodes: 12}]\nmodel: {preset: gpt2}\n"
                                         "training: {seq_len: 128, global_batch: 96}\n");
  CHECK(run["step_time_s"].get<double>() > 0);
}

TEST_CASE("the_summary_names_the_fabrics_tiers", "[network]")
{
  std::string spec = temp_path("clos_title.yaml");
  write_file(spec, "hardware:\n  node: dgx-h100\n  nodes: 4\n  network:\n    rail_optimized: true\n    tiers: [{name: "
                   "rack, nodes: 2}, {name: pod, nodes: 4, oversubscription: 4}]\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 128, global_batch: 32}\n");
  CliResult r = run_cli("run " + spec);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("\n  fabric tiers: rack (2 nodes); pod (4 nodes, 1:4 up), rail-optimised\n"));
}

TEST_CASE("a_hierarchical_rings_steps_wait_for_its_hop_between_pods", "[network]")
{
  // 4 nodes in pods of 2 whose layer above has 10 us switches: a hop between pods climbs
  // to it, (1 + 10) / 2 us up and down, 11 us more than a hop inside a pod. An all-reduce
  // of 8 bytes over the 4 nodes (the `hierarchical` plan: 2 (4 - 1) = 6 steps across
  // nodes) pays 5 step latencies at the slowest hop and its flows' own route once: 6 x 11
  // = 66 us more than on one switch (it paid 11, the first pair's hop being in a pod).
  auto time    = [](const std::string& network) { return all_reduce_s(4, network, 8, "hierarchical"); };
  double flat  = time("");
  double tiers = time("tiers: [{name: pod, nodes: 2, switch_latency_s: 10 us}]");
  CHECK((tiers - flat) * 1e6 == Approx(66).margin(0.5));
}

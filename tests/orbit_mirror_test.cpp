// Mirrored orbits (sim/replay/OrbitFold.hpp) change how many flows the replay starts, never
// what it computes: every op's start and end, every pool's peak, every link's bytes and
// busy time must equal the replay that starts every shadow rank's flow (relative
// difference <= 1e-9), on the examples and on DAGs built to break the symmetry.
#include "sim/Simulation.hpp"
#include "tests/ReplayDigest.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace memwall;
using namespace memwall::test;

namespace {

// The spec's --json replay (chains, coalesced runs, no records), mirrored and not.
std::pair<Digest, Digest> both_replays(const ExperimentSpec& spec)
{
  std::vector<Digest> d = replays(spec, {{.all_records = false, .memory_timelines = true, .mirror_orbits = true},
                                         {.all_records = false, .memory_timelines = true, .mirror_orbits = false}});
  return {d[0], d[1]};
}

// Two nodes of 8 GPUs, one NVSwitch, one PCIe link and one 25 GB/s NIC per GPU, the
// IB fabric oversubscribed 2:1: each node's IB link carries 8 x 25 / 2 = 100 GB/s. A
// GPU's own PCIe link runs 20 GB/s towards it, 50 GB/s away from it.
ClusterSpec two_nodes()
{
  ClusterSpec c         = hand_cluster(8, GpuFabric::nvswitch, 2);
  c.nodes               = 2;
  c.oversubscription    = 2;
  c.switch_latency_s    = 1e-6;
  c.node.gpu.h2d_bw     = 20e9;
  c.node.nics           = 8;
  c.node.nic_bw         = 25e9;
  c.node.nic_latency_s  = 2e-6;
  c.node.pcie_uplink_bw = 100e9;
  return c;
}

DeviceRef gpu(int node, int index) { return {DeviceKind::gpu, node, index}; }

// A 1 GB copy ("send") from GPU 0 of node 0 to `dst`, GPU 0 standing for itself and
// GPUs 1 .. shadows of its node.
OpDag send_from(int shadows, const DeviceRef& dst)
{
  OpDag dag;
  std::vector<DeviceRef> peers;
  for (int i = 1; i <= shadows; ++i)
    peers.push_back(gpu(0, i));
  dag.set_shadows(gpu(0, 0), peers);
  dag.add(copy_op(gpu(0, 0), StreamKind::p2p, gpu(0, 0), dst, 1e9, "send"));
  return dag;
}

// The same from all 8 GPUs of node 0 to GPU 0 of node 1 (tensor parallelism 8, as a
// pipeline stage's send).
OpDag send_from_a_whole_node() { return send_from(7, gpu(1, 0)); }

// The DAG's replay with mirrored orbits, then with every flow started.
std::pair<RunResult, RunResult> mirrored_and_full(const ClusterSpec& c, const OpDag& dag, ReplayOptions options = {})
{
  options.mirror_orbits = true;
  RunResult on          = replay_in_child(c, dag, options);
  options.mirror_orbits = false;
  return {std::move(on), replay_in_child(c, dag, options)};
}

const LinkResult& link(const RunResult& r, const std::string& name)
{
  for (const LinkResult& l : r.links)
    if (l.name == name)
      return l;
  FAIL("no link " << name);
  return r.links.front();
}

} // namespace

TEST_CASE("mirrored_replay_of_every_example_equals_the_replay_of_every_shadow_flow", "[orbits]")
{
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    if (entry.path().extension() != ".yaml")
      continue;
    std::string path = entry.path().string();
    INFO(path);
    auto [mirrored, full] = both_replays(load_spec(path, {}));
    require_same_replay(mirrored, full);
    CHECK(mirrored.activities <= full.activities);
    // Megatron's scatter-gather sends one eighth of each activation from every GPU of
    // a stage: 8 flows per send, one when mirrored.
    if (path.find("megatron-1t") != std::string::npos)
      CHECK(mirrored.activities < full.activities / 3);
  }
}

TEST_CASE("eight_shadow_copies_across_nodes_run_as_one_flow_at_an_eighth_of_the_ib_link", "[orbits]")
{
  // By hand: 8 flows of 1 GB share each node's 100 GB/s IB link, 12.5 GB/s each (their
  // NICs and PCIe links allow 25 and 20). Latency: PCIe 1 us + NIC 1 us + IB 0.5 us on
  // each side = 5 us. 5e-6 + 1e9 / 12.5e9 = 0.080005 s.
  ClusterSpec c  = two_nodes();
  OpDag dag      = send_from_a_whole_node();
  auto [on, off] = mirrored_and_full(c, dag);
  CHECK(record(on, "send").end == Approx(5e-6 + 1e9 / 12.5e9).epsilon(1e-9));
  CHECK(record(off, "send").end == Approx(5e-6 + 1e9 / 12.5e9).epsilon(1e-9));
  CHECK(on.activities == 1);
  CHECK(off.activities == 8);
  // Every GPU's own links carry its 1 GB, each IB link all 8 GB, busy for the whole copy.
  for (int i = 0; i < 8; ++i) {
    std::string g = "node0.gpu" + std::to_string(i);
    CHECK(link(on, g + ".pcie.up").bytes == Approx(1e9).epsilon(1e-12));
    CHECK(link(on, "node1.gpu" + std::to_string(i) + ".pcie.down").busy_s ==
          Approx(link(off, "node1.gpu" + std::to_string(i) + ".pcie.down").busy_s).epsilon(1e-12));
  }
  CHECK(link(on, "node0.ib.up").bytes == Approx(8e9).epsilon(1e-12));
  CHECK(link(on, "node1.ib.down").busy_s == Approx(link(off, "node1.ib.down").busy_s).epsilon(1e-12));
  CHECK(on.links.size() == off.links.size());
}

TEST_CASE("a_host_copy_into_one_shadow_gpu_keeps_every_flow_of_the_orbit", "[orbits]")
{
  // The same send, and a 1 GB copy from node 1's host into its GPU 3, which shares GPU
  // 3's 20 GB/s PCIe link with the send's image 3. SimGrid's CM02 shares a link in
  // inverse proportion to each flow's route latency: 1 us for the copy, 5 us for the
  // send, so the copy gets 20 x 5/6 = 16.67 GB/s and image 3 3.33 GB/s. By hand:
  //   t1 = 1e9 / 16.67e9 = 0.060 s: the copy ends; image 3 has moved 0.2 GB, the
  //        other seven, at (100 - 3.33) / 7 = 13.81 GB/s, 0.829 GB;
  //   t2 = t1 + 0.171 / 12.5 = 0.0737 s: all 8 at 12.5 GB/s until the seven end;
  //   t3 = t2 + (1 - 0.2 - 0.171) / 20 = 0.1051 s: image 3 alone at its PCIe's 20 GB/s.
  // Mirrored from image 0 the send would end at 0.08 s: the copy breaks the symmetry
  // and nothing is mirrored.
  ClusterSpec c = two_nodes();
  OpDag dag     = send_from_a_whole_node();
  dag.add(copy_op(gpu(1, 3), StreamKind::h2d, {DeviceKind::host, 1, 0}, gpu(1, 3), 1e9, "h2d"));
  auto [on, off] = mirrored_and_full(c, dag);
  CHECK(record(off, "h2d").end == Approx(0.06).epsilon(1e-3));
  CHECK(record(off, "send").end == Approx(0.1051).epsilon(1e-3));
  CHECK(record(on, "send").end == Approx(record(off, "send").end).epsilon(1e-12));
  CHECK(record(on, "h2d").end == Approx(record(off, "h2d").end).epsilon(1e-12));
  CHECK(on.activities == off.activities);
  require_same_replay(on, off);
}

TEST_CASE("a_copy_from_half_a_node_runs_as_one_flow_turned_inside_its_half", "[orbits]")
{
  // GPU 0 standing for GPUs 0-3 only (tensor parallelism 4 on a node of 8): its 4
  // images are an orbit of the rotation inside each half of the node, GPUs 4-7 send
  // nothing. Each flow gets 100 / 4 = 25 GB/s of the IB link, held to 20 by its PCIe
  // link: 5e-6 + 1e9 / 20e9 = 0.050005 s, one flow started instead of 4.
  ClusterSpec c  = two_nodes();
  OpDag dag      = send_from(3, gpu(1, 0));
  auto [on, off] = mirrored_and_full(c, dag);
  CHECK(record(on, "send").end == Approx(5e-6 + 1e9 / 20e9).epsilon(1e-9));
  CHECK(on.activities == 1);
  CHECK(off.activities == 4);
  require_same_replay(on, off);
  CHECK(link(on, "node0.gpu3.pcie.up").bytes == Approx(1e9).epsilon(1e-12));
  CHECK(link(on, "node0.ib.up").bytes == Approx(4e9).epsilon(1e-12));
}

TEST_CASE("shadows_that_do_not_tile_the_node_keep_every_flow", "[orbits]")
{
  // GPU 0 standing for GPUs 0-2: blocks of 3 do not tile a node of 8, so no rotation
  // of the node maps the 3 flows onto one another. 100 / 3 GB/s of the IB link each,
  // held to 20 by PCIe: 0.050005 s again, with every flow started.
  ClusterSpec c  = two_nodes();
  OpDag dag      = send_from(2, gpu(1, 0));
  auto [on, off] = mirrored_and_full(c, dag);
  CHECK(record(on, "send").end == Approx(5e-6 + 1e9 / 20e9).epsilon(1e-9));
  CHECK(on.activities == 3);
  require_same_replay(on, off);
}

TEST_CASE("a_copy_whose_shadow_images_leave_their_block_keeps_every_flow", "[orbits]")
{
  // GPU 0 standing for GPUs 0-3 sends to GPU 5 of node 1: its shadows' images go to
  // GPUs 6 and 7 of node 1 and GPU 0 of node 2, out of the half of node 1 the send
  // starts in, which no rotation inside the halves produces. Nothing is mirrored, and
  // the figures are the full replay's.
  ClusterSpec c  = two_nodes();
  c.nodes        = 3;
  OpDag dag      = send_from(3, gpu(1, 5));
  auto [on, off] = mirrored_and_full(c, dag);
  CHECK(on.activities == 4);
  require_same_replay(on, off);
}

TEST_CASE("a_collective_whose_flows_cover_every_gpu_index_runs_as_its_canonical_flows", "[orbits]")
{
  // An all-reduce over the GPUs 0 of two nodes, with GPU 0's shadows' groups (the GPUs
  // k of both nodes) beside it: every flow has its images on the other 7 indices, so
  // each step runs one flow per direction. The same times and link figures as when
  // all 8 groups' flows run.
  ClusterSpec c = two_nodes();
  OpDag dag;
  std::vector<DeviceRef> peers;
  std::vector<std::vector<DeviceRef>> others;
  for (int i = 1; i < 8; ++i) {
    peers.push_back(gpu(0, i));
    others.push_back({gpu(0, i), gpu(1, i)});
  }
  dag.set_shadows(gpu(0, 0), peers);
  int32_t g = dag.add_group({gpu(0, 0), gpu(1, 0)}, others);
  dag.add(collective_op(gpu(0, 0), StreamKind::comm, CollectiveKind::all_reduce, g, 1e9, "ar"));
  for (const char* algorithm : {"ring", "bulk_ring", "hierarchical"}) {
    INFO(algorithm);
    auto [on, off] = mirrored_and_full(c, dag, {.collective_algorithm = algorithm});
    require_same_replay(on, off);
    CHECK(on.activities * 4 <= off.activities);
    CHECK(link(on, "node0.ib.up").bytes == Approx(link(off, "node0.ib.up").bytes).epsilon(1e-12));
  }
}

TEST_CASE("a_shadow_sends_to_the_gpu_as_many_ranks_on_as_itself_even_on_the_next_node", "[orbits]")
{
  // Ranks are numbered node by node (rank = node x 8 + GPU). A stage of 12 ranks (tp 4
  // x dp 3) starting at rank 0 sends to the next stage, which starts at rank 12: GPU 4
  // of node 1. GPU 0's 7 shadows on node 0 are ranks 1-7; their partners are ranks
  // 13-19: GPUs 5-7 of node 1 and GPUs 0-3 of node 2. So node 1 receives 4 of the 8
  // flows of 1 GB and node 2 the other 4; none of node 1's GPUs 0-3 (the first stage's
  // own ranks) receives anything.
  ClusterSpec c = two_nodes();
  c.nodes       = 3;
  OpDag dag     = send_from(7, gpu(1, 4));
  for (bool mirror : {true, false}) {
    INFO("mirrored " << mirror);
    RunResult r = replay_in_child(c, dag, {.mirror_orbits = mirror});
    CHECK(link(r, "node0.ib.up").bytes == Approx(8e9).epsilon(1e-12));
    CHECK(link(r, "node1.ib.down").bytes == Approx(4e9).epsilon(1e-12));
    CHECK(link(r, "node2.ib.down").bytes == Approx(4e9).epsilon(1e-12));
    for (int i = 0; i < 4; ++i) {
      CHECK(link(r, "node1.gpu" + std::to_string(i + 4) + ".pcie.down").bytes == Approx(1e9).epsilon(1e-12));
      CHECK(link(r, "node2.gpu" + std::to_string(i) + ".pcie.down").bytes == Approx(1e9).epsilon(1e-12));
      for (const LinkResult& l : r.links)
        CHECK(l.name != "node1.gpu" + std::to_string(i) + ".pcie.down");
    }
  }
}

// Coalesced runs (sim/replay/Coalescer.cpp) change how many activities the replay starts,
// never what it computes: every op's start and end, every pool's timeline and peak,
// every link's bytes and busy time must equal the op-by-op replay's (relative
// difference <= 1e-9), on the examples and on DAGs built to defeat each rule.
#include "base/ChildPool.hpp"
#include "sim/Simulation.hpp"
#include "tests/ReplayDigest.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

using namespace memwall;
using namespace memwall::test;

namespace {

// Both replays of a spec (coalesced, then op by op), side by side in two children.
std::pair<Digest, Digest> both_replays(const ExperimentSpec& spec)
{
  std::vector<Digest> d = replays(spec, {{.coalesce = true}, {.coalesce = false}});
  return {d[0], d[1]};
}

RunResult replay_dag(const ClusterSpec& c, const OpDag& dag, bool coalesce)
{
  ReplayOptions o;
  o.coalesce = coalesce;
  return replay_in_child(c, dag, o);
}

const DeviceRef gpu0{DeviceKind::gpu, 0, 0};
const DeviceRef gpu1{DeviceKind::gpu, 0, 1};
const DeviceRef host0{DeviceKind::host, 0, 0};

// `count` times, on the compute stream of GPU 0: a 10 us kernel, then an all-reduce of
// `bytes` over GPUs 0-1 ("k0", "ar0", ...).
void add_kernels_and_all_reduces(OpDag& dag, int count, double bytes)
{
  int32_t pair = dag.add_group({gpu0, gpu1});
  for (int i = 0; i < count; ++i) {
    dag.add(kernel_op(gpu0, 1e9, 1e6, "k" + std::to_string(i)));
    dag.add(
        collective_op(gpu0, StreamKind::compute, CollectiveKind::all_reduce, pair, bytes, "ar" + std::to_string(i)));
  }
}

} // namespace

TEST_CASE("coalesced_replay_of_every_example_equals_the_op_by_op_replay", "[coalescing]")
{
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    std::string path = entry.path().string();
    // The 3,072-GPU step takes half a minute op by op; its sibling gpt3-175b runs the
    // same generator and rules at 1/10 the size.
    if (entry.path().extension() != ".yaml" || path.find("megatron-1t") != std::string::npos)
      continue;
    INFO(path);
    ExperimentSpec spec = load_spec(path, {});
    auto [a, b]         = both_replays(spec);
    require_same_replay(a, b);
    CHECK(a.activities <= b.activities);
  }
}

TEST_CASE("a_chain_of_kernels_alone_on_its_gpu_is_one_activity_lasting_their_sum", "[coalescing]")
{
  // hand_cluster: 400 TFLOP/s bf16 at 0.5 efficiency, 2 TB/s HBM, 5 us overhead.
  // 100 kernels of 1 GFLOP and 1 MB: each 5 us + max(1e9 / 200e12, 1e6 / 2e12) = 10 us.
  ClusterSpec c = hand_cluster(1, GpuFabric::nvswitch, 1);
  OpDag dag;
  for (int i = 0; i < 100; ++i)
    dag.add(kernel_op(gpu0, 1e9, 1e6, "k" + std::to_string(i)));
  RunResult a = replay_dag(c, dag, true), b = replay_dag(c, dag, false);
  require_same_replay(a, b);
  CHECK(a.activities == 1);
  CHECK(b.activities == 100);
  CHECK(a.makespan_s == Approx(100 * 10e-6).epsilon(1e-12));
  CHECK(record(a, "k41").start == Approx(41 * 10e-6).epsilon(1e-12));
}

TEST_CASE("kernels_beside_a_copy_through_their_hbm_are_replayed_op_by_op", "[coalescing]")
{
  // A device-to-device copy on another stream shares the HBM with the kernels: their
  // times depend on it, so they may not be summed in advance.
  ClusterSpec c = hand_cluster(1, GpuFabric::nvswitch, 1);
  OpDag dag;
  for (int i = 0; i < 10; ++i)
    dag.add(kernel_op(gpu0, 1e6, 1e9, "k" + std::to_string(i))); // memory-bound: 5 us + 1e9 / 2e12
  dag.add(copy_op(gpu0, StreamKind::d2h, gpu0, gpu0, 5e9, "d2d"));
  RunResult a = replay_dag(c, dag, true), b = replay_dag(c, dag, false);
  require_same_replay(a, b);
  CHECK(a.activities == b.activities);
  double alone = 10 * (5e-6 + 1e9 / 2e12);
  CHECK(record(a, "k9").end > 1.2 * alone); // slowed by the copy, as it should be
}

TEST_CASE("a_collective_sharing_nvlink_with_a_peer_copy_is_replayed_op_by_op", "[coalescing]")
{
  // All-reduces of 256 MB on the compute stream of GPU 0 over GPUs 0-1 (about 0.64 ms
  // each at 400 GB/s), and a 0.5 GB peer copy GPU 0 -> GPU 1 (1.25 ms) on the p2p
  // stream over the same NVLink ports.
  ClusterSpec c = hand_cluster(2, GpuFabric::nvswitch, 2);
  OpDag dag;
  add_kernels_and_all_reduces(dag, 4, 256e6);
  dag.add(copy_op(gpu0, StreamKind::p2p, gpu0, gpu1, 0.5e9, "peer"));
  RunResult a = replay_dag(c, dag, true), b = replay_dag(c, dag, false);
  require_same_replay(a, b);
  // Without the copy the all-reduces repeat exactly; beside it the first ones slow down.
  CHECK(record(a, "ar0").end - record(a, "ar0").start > 1.05 * (record(a, "ar3").end - record(a, "ar3").start));
}

TEST_CASE("repeated_private_collectives_take_what_the_first_one_measured", "[coalescing]")
{
  // The same all-reduce over a private NVLink pair, 20 times between kernels: after
  // the first, each one joins a coalesced run with the first one's measured time.
  ClusterSpec c = hand_cluster(2, GpuFabric::nvswitch, 2);
  OpDag dag;
  add_kernels_and_all_reduces(dag, 20, 64e6);
  RunResult a = replay_dag(c, dag, true), b = replay_dag(c, dag, false);
  require_same_replay(a, b);
  CHECK(a.activities * 5 < b.activities);
}

TEST_CASE("allocs_and_frees_inside_a_run_keep_their_place_among_other_streams_events", "[coalescing]")
{
  // Compute stream: alloc A (10 GB), 3 kernels, free A, alloc B (20 GB), 3 kernels,
  // free B: one run, each kernel 5 us + 1e13 / 200e12 = 50.005 ms, so A lives from 0 to
  // 150.015 ms and B from there to 300.03 ms. h2d stream: host -> GPU copies of 4 GB
  // (the 25 GB/s PCIe uplink: 160 ms each), an alloc of 1 GB after each: C0 at 160 ms,
  // inside the run, C1 at 320 ms and C2 at 480 ms after it.
  ClusterSpec c = hand_cluster(1, GpuFabric::nvswitch, 1);
  OpDag dag;
  Tensor ta = dag.alloc(gpu0, StreamKind::compute, gpu0, MemCategory::activations, 10e9, "A");
  for (int i = 0; i < 3; ++i)
    dag.add(kernel_op(gpu0, 1e13, 0, "a" + std::to_string(i)));
  dag.free(ta, gpu0, StreamKind::compute, "free A");
  Tensor tb = dag.alloc(gpu0, StreamKind::compute, gpu0, MemCategory::activations, 20e9, "B");
  for (int i = 0; i < 3; ++i)
    dag.add(kernel_op(gpu0, 1e13, 0, "b" + std::to_string(i)));
  dag.free(tb, gpu0, StreamKind::compute, "free B");
  for (int i = 0; i < 3; ++i) {
    dag.add(copy_op(gpu0, StreamKind::h2d, host0, gpu0, 4e9, "h2d" + std::to_string(i)));
    dag.alloc(gpu0, StreamKind::h2d, gpu0, MemCategory::weights, 1e9, "C" + std::to_string(i));
  }
  RunResult a = replay_dag(c, dag, true), b = replay_dag(c, dag, false);
  require_same_replay(a, b);
  // Peak: B and C0, 21 GB at 160 ms.
  const PoolResult& hbm = a.pools.front();
  CHECK(hbm.peak_bytes == Approx(21e9).epsilon(1e-12));
  CHECK(hbm.peak_time == Approx(160e-3).epsilon(1e-3));
  CHECK(a.activities < b.activities);
  CHECK(std::is_sorted(hbm.timeline.begin(), hbm.timeline.end(),
                       [](const MemoryEvent& x, const MemoryEvent& y) { return x.time < y.time; }));
}

TEST_CASE("an_unbalanced_pipeline_coalesces_to_the_same_step", "[coalescing]")
{
  // GPT-2 on 4 stages of 3 layers: the first stage also embeds and the last one runs
  // the LM head over a 50k vocabulary, so runs differ per stage and the last stage
  // sets the pace of the 1F1B schedule.
  ExperimentSpec spec = parse_spec("hardware: {node: dgx-a100, gpus_per_node: 4}\nmodel: {preset: gpt2}\n"
                                   "training: {seq_len: 512, global_batch: 16, micro_batch: 1, pp: 4}\n",
                                   "test.yaml", "");
  auto [a, b]         = both_replays(spec);
  require_same_replay(a, b);
  CHECK(a.activities < b.activities);
}

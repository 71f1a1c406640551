// Flows and kernels on the SimGrid platform, against hand calculations.
// hand_cluster: uplink 25 GB/s shared per PCIe switch, GPU x16 link 50 GB/s, PCIe
// latency 1 us per hop (2 hops host->GPU: uplink has none, GPU link 1 us), DRAM 400 GB/s,
// NVLink 400 GB/s per direction with 1 us per half (2 us per hop), HBM 2 TB/s with
// 5 us kernel overhead as route latency, bf16 GEMM 400 TFLOP/s x 0.5.
#include "hwmodels/profile/GpuProfile.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace memwall;
using namespace memwall::test;

namespace {
const DeviceRef cpu0{DeviceKind::host, 0, 0};
const DeviceRef gpu0{DeviceKind::gpu, 0, 0};
const DeviceRef gpu1{DeviceKind::gpu, 0, 1};
const double GB = 1e9;
} // namespace

TEST_CASE("two_1gb_h2d_copies_sharing_a_pcie_uplink_take_twice_as_long_as_one", "[flows]")
{
  ClusterSpec c = hand_cluster(2, GpuFabric::pcie, 2); // both GPUs behind one switch
  // Alone: 1 GB over min(400, 25, 50) GB/s = 40 ms, plus the GPU link's 1 us latency.
  OpDag one;
  one.add(copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "a"));
  RunResult alone = replay_in_child(c, one, {});
  CHECK(record(alone, "a").end == Approx(1e-6 + GB / 25e9).epsilon(1e-12));

  // Together: each gets half the 25 GB/s uplink, 80 ms.
  OpDag two;
  two.add(copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "a"));
  two.add(copy_op(gpu1, StreamKind::h2d, cpu0, gpu1, GB, "b"));
  RunResult shared = replay_in_child(c, two, {});
  CHECK(record(shared, "a").end == Approx(1e-6 + 2 * GB / 25e9).epsilon(1e-12));
  CHECK(record(shared, "b").end == Approx(1e-6 + 2 * GB / 25e9).epsilon(1e-12));
  CHECK((record(shared, "a").end - 1e-6) == Approx(2 * (record(alone, "a").end - 1e-6)).epsilon(1e-12));
}

TEST_CASE("h2d_copies_to_gpus_on_different_switches_do_not_share_bandwidth", "[flows]")
{
  ClusterSpec c = hand_cluster(2, GpuFabric::pcie, 1); // one switch per GPU
  OpDag two;
  two.add(copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "a"));
  two.add(copy_op(gpu1, StreamKind::h2d, cpu0, gpu1, GB, "b"));
  RunResult r = replay_in_child(c, two, {});
  CHECK(record(r, "a").end == Approx(1e-6 + GB / 25e9).epsilon(1e-12));
  CHECK(record(r, "b").end == Approx(1e-6 + GB / 25e9).epsilon(1e-12));
}

TEST_CASE("h2d_and_d2h_use_opposite_directions_of_a_link_without_slowing_each_other", "[flows]")
{
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  OpDag dag;
  dag.add(copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "h2d"));
  dag.add(copy_op(gpu0, StreamKind::d2h, gpu0, cpu0, GB, "d2h"));
  RunResult r = replay_in_child(c, dag, {});
  CHECK(record(r, "h2d").end == Approx(1e-6 + GB / 25e9).epsilon(1e-12));
  CHECK(record(r, "d2h").end == Approx(1e-6 + GB / 25e9).epsilon(1e-12));
}

TEST_CASE("an_nvlink_copy_does_not_slow_a_concurrent_pcie_copy", "[flows]")
{
  ClusterSpec c = hand_cluster(2, GpuFabric::nvswitch, 2);
  OpDag dag;
  dag.add(copy_op(gpu0, StreamKind::comm, gpu0, gpu1, 4 * GB, "nvlink"));
  dag.add(copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "pcie"));
  RunResult r = replay_in_child(c, dag, {});
  // NVLink: 2 us + 4 GB / 400 GB/s = 10 ms; PCIe alone: 1 us + 40 ms.
  CHECK(record(r, "nvlink").end == Approx(2e-6 + 4 * GB / 400e9).epsilon(1e-12));
  CHECK(record(r, "pcie").end == Approx(1e-6 + GB / 25e9).epsilon(1e-12));
}

TEST_CASE("a_kernels_time_is_the_max_of_its_compute_and_hbm_terms_plus_overhead", "[kernels]")
{
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  OpDag dag;
  // Compute-bound: 2 TFLOP at 200 TFLOP/s = 10 ms against 1 GB at 2 TB/s = 0.5 ms.
  OpId k1 = dag.add(kernel_op(gpu0, 2e12, GB, "compute_bound"));
  // Memory-bound: 0.2 TFLOP = 1 ms against 8 GB at 2 TB/s = 4 ms.
  dag.add(kernel_op(gpu0, 0.2e12, 8 * GB, "memory_bound"), {k1});
  RunResult r           = replay_in_child(c, dag, {});
  const double overhead = 5e-6;
  const auto& a         = record(r, "compute_bound");
  const auto& b         = record(r, "memory_bound");
  CHECK(a.end - a.start == Approx(overhead + 2e12 / 200e12).epsilon(1e-12));
  CHECK(b.end - b.start == Approx(overhead + 8 * GB / 2e12).epsilon(1e-12));
}

TEST_CASE("two_concurrent_memory_bound_kernels_share_hbm_bandwidth", "[kernels]")
{
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  OpDag dag;
  // Different streams, so they run together: each gets 1 TB/s of the 2 TB/s HBM.
  Op a     = kernel_op(gpu0, 0, 4 * GB, "a");
  Op b     = kernel_op(gpu0, 0, 4 * GB, "b");
  b.stream = StreamKind::comm;
  dag.add(a);
  dag.add(b);
  RunResult r = replay_in_child(c, dag, {});
  CHECK(record(r, "a").end == Approx(5e-6 + 8 * GB / 2e12).epsilon(1e-12));
  CHECK(record(r, "b").end == Approx(5e-6 + 8 * GB / 2e12).epsilon(1e-12));
}

TEST_CASE("a_decode_attention_beside_another_stream_takes_its_own_kernels_time", "[kernels][attention]")
{
  // A decode kernel reading 32 MB of KV streams on its own curve, not at the HBM's rate:
  // 10 us + 32 MB / (0.686 x 2 TB/s) = 33.3 us (the GPU's kv_read_* defaults), of which
  // 5 us is the launch. Beside a 1 MB kernel on another stream (the HBM then shared by
  // flows) it still takes that long, plus the other's 5 us launch, which runs on the same
  // GPU at half speed each for its first 10 us (concurrent kernels share the SMs): 38.3 us.
  // Its bytes at 2 TB/s would have ended it by ~21.5 us.
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  OpDag dag;
  Op attn      = kernel_op(gpu0, 0, 32e6, "attn");
  attn.kclass  = KernelClass::attention;
  attn.family  = KernelFamily::kv_read;
  Op other     = kernel_op(gpu0, 0, 1e6, "other");
  other.stream = StreamKind::comm;
  dag.add(attn);
  dag.add(other);
  RunResult r = replay_in_child(c, dag, {});
  CHECK(record(r, "attn").end == Approx(10e-6 + 32e6 / (0.686 * 2e12) + 5e-6).epsilon(0.01));
}

TEST_CASE("ops_on_one_stream_run_in_issue_order", "[dag]")
{
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  OpDag dag;
  dag.add(kernel_op(gpu0, 2e12, 0, "first"));  // 10 ms + 5 us
  dag.add(kernel_op(gpu0, 2e12, 0, "second")); // same stream: starts when the first ends
  RunResult r = replay_in_child(c, dag, {});
  CHECK(record(r, "second").start == Approx(record(r, "first").end).epsilon(1e-12));
  CHECK(r.makespan_s == Approx(2 * (5e-6 + 10e-3)).epsilon(1e-12));
}

TEST_CASE("a_replay_that_stalls_on_a_dependency_cycle_says_so_and_when", "[flows][errors]")
{
  // a -> b on one stream, and b -> a by an explicit edge: neither can start. A stall is
  // called a cycle only when the replay finds one.
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  OpDag dag;
  OpId a = dag.add(copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "a"));
  OpId b = dag.add(copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "b"));
  dag.depend(a, b);
  CHECK_THROWS_WITH(replay_in_child(c, dag, {}), Catch::Contains("2 of 2 ops never ran") &&
                                                     Catch::Contains("dependency cycle") &&
                                                     Catch::Contains("simulated time 0.0"));
}

TEST_CASE("a_pageable_copy_runs_at_the_slower_of_the_link_and_the_staging_memcpy", "[flows][offload]")
{
  // The driver copies pageable memory through its pinned staging buffer, one memcpy thread
  // pipelined with the DMA. 1 GB over the 25 GB/s uplink: 40 ms pinned. Staged at the
  // default 10.7 GB/s: 1e9 / 10.7e9 = 93.46 ms. Staged at 50 GB/s the link is the slower:
  // 40 ms again (DRAM: 3 GB at 400 GB/s = 7.5 ms, not the bottleneck).
  auto time_of = [](double staging_bw, bool pageable, bool h2d) {
    ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
    if (staging_bw > 0)
      c.node.pageable_copy_bw = staging_bw;
    OpDag dag;
    dag.add(h2d ? host_copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "c", !pageable)
                : host_copy_op(gpu0, StreamKind::d2h, gpu0, cpu0, GB, "c", !pageable));
    return record(replay_in_child(c, dag, {}), "c").end;
  };
  CHECK(time_of(0, false, true) == Approx(1e-6 + GB / 25e9).epsilon(1e-9));
  CHECK(time_of(0, true, true) == Approx(GB / 10.7e9).epsilon(1e-9));
  CHECK(time_of(0, true, false) == Approx(GB / 10.7e9).epsilon(1e-9)); // D2H stages the other way
  CHECK(time_of(50e9, true, true) == Approx(1e-6 + GB / 25e9).epsilon(1e-9));
}

TEST_CASE("host_copies_take_the_profiles_measured_copy_curves_where_it_has_them", "[flows][calibration]")
{
  // A profile fitted from memwall-gpubench holds the copies it measured. By hand, 1 GB:
  //   h2d pinned, curve 10 us + bytes / 12 GB/s:      0.01 ms + 83.333 ms (the uplink's
  //                                                   25 GB/s would give 40 ms)
  //   d2h pageable, curve 20 us + bytes / 8 GB/s:     0.02 ms + 125 ms (the measured
  //                                                   copy, staging included)
  //   h2d pageable, no curve: the staging model, max(0.001 + 40, 93.46) ms
  auto time_of = [](bool pageable, bool h2d) {
    ClusterSpec c                     = hand_cluster(1, GpuFabric::pcie, 1);
    auto p                            = std::make_shared<GpuProfile>();
    p->gpu                            = c.node.gpu.id;
    p->copies["h2d_pinned"].regimes   = {Regime{INFINITY, 10e-6, 12e9}};
    p->copies["d2h_pageable"].regimes = {Regime{INFINITY, 20e-6, 8e9}};
    c.node.gpu.profile                = p;
    OpDag dag;
    dag.add(h2d ? host_copy_op(gpu0, StreamKind::h2d, cpu0, gpu0, GB, "c", !pageable)
                : host_copy_op(gpu0, StreamKind::d2h, gpu0, cpu0, GB, "c", !pageable));
    return record(replay_in_child(c, dag, {}), "c").end;
  };
  CHECK(time_of(false, true) == Approx(10e-6 + GB / 12e9).epsilon(1e-6));
  CHECK(time_of(true, false) == Approx(20e-6 + GB / 8e9).epsilon(1e-6));
  CHECK(time_of(true, true) == Approx(GB / 10.7e9).epsilon(1e-6));
  // d2h pinned has no curve either: the link, 1 us + 40 ms.
  CHECK(time_of(false, false) == Approx(1e-6 + GB / 25e9).epsilon(1e-6));
}

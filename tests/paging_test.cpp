// Unified memory (sim/paging) against hand calculations on hand_cluster (TestHelpers):
// host -> GPU is min(DRAM 400, uplink 25, GPU link 50) = 25 GB/s with 1 us of latency;
// HBM 2 TB/s; kernels 5 us of overhead. Driver constants as nvidia-uvm sets them and
// fault costs as measured (calibration/data/uvm.md): 2 MiB chunks, 64 KiB big pages, the
// density prefetcher completing a chunk once 51 % of it faulted, 256 faults per batch,
// 14 us per batch, on-demand migration at 7.4 / 12.2 of the copy rate.
#include "hwmodels/Catalog.hpp"
#include "sim/Simulation.hpp"
#include "sim/spec/MemoryReader.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace memwall;
using namespace memwall::test;

namespace {

const DeviceRef gpu0{DeviceKind::gpu, 0, 0};
const DeviceRef gpu1{DeviceKind::gpu, 0, 1};
const double GiB        = 1024.0 * 1024 * 1024;
const double pcie       = 25e9;
const double efficiency = 7.4 / 12.2;
const double batch_s    = 14e-6;

// Unified memory for `categories`, cold: weights start on the host, as just after loading.
ReplayOptions managed(std::initializer_list<MemCategory> categories)
{
  ReplayOptions o;
  o.memory.warm = false;
  for (MemCategory c : categories)
    o.memory.managed.set(static_cast<size_t>(c));
  return o;
}

const PagingResult& paging_of(const RunResult& r, const DeviceRef& gpu)
{
  for (const auto& p : r.paging)
    if (p.device == gpu)
      return p;
  FAIL("no paging result for " << gpu.name());
  throw std::logic_error("unreachable");
}

// A GPU kernel of 2 GFLOP reading `bytes` of weights that the CPU wrote (host-resident).
OpDag one_kernel_reading_weights(const DeviceRef& gpu, double bytes, const std::string& name)
{
  OpDag dag;
  dag.track_accesses(true);
  Tensor w = dag.alloc(gpu, StreamKind::compute, gpu, MemCategory::weights, bytes, name + ".weights");
  OpId k   = dag.add(kernel_op(gpu, 2e9, bytes, name));
  dag.touch(k, w, bytes, false);
  return dag;
}

} // namespace

TEST_CASE("a_kernel_reading_1_gib_of_host_resident_managed_memory_waits_for_fault_batches_and_the_migration",
          "[paging]")
{
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  RunResult r   = replay_in_child(c, one_kernel_reading_weights(gpu0, GiB, "read"), managed({MemCategory::weights}));
  // 512 chunks of 2 MiB; each faults on ceil(0.51 x 32) = 17 of its 64 KiB pages before
  // the prefetcher migrates the rest: 8704 faults, ceil(8704 / 256) = 34 batches.
  double driver  = 34 * batch_s;
  double migrate = 1e-6 + GiB / (pcie * efficiency);
  double kernel  = 5e-6 + GiB / 2e12; // memory-bound: 2 GFLOP at 200 TFLOP/s is 10 us
  CHECK(record(r, "read").end == Approx(driver + migrate + kernel).epsilon(0.01));
  CHECK(record(r, "read").paging_s == Approx(driver + migrate).epsilon(0.01));
  const PagingResult& p = paging_of(r, gpu0);
  CHECK(p.faults == 8704);
  CHECK(p.fault_batches == 34);
  CHECK(p.migrated_h2d_bytes == GiB);
  CHECK(p.migrated_d2h_bytes == 0);
  CHECK(p.evictions == 0);
}

TEST_CASE("prefetching_before_use_turns_faults_into_one_copy_at_the_copy_engine_rate", "[paging]")
{
  ClusterSpec c     = hand_cluster(1, GpuFabric::pcie, 1);
  ReplayOptions o   = managed({MemCategory::weights});
  o.memory.prefetch = "layer";
  RunResult r       = replay_in_child(c, one_kernel_reading_weights(gpu0, GiB, "read"), o);
  // cudaMemPrefetchAsync: 1 us + 2^30 B / 25 GB/s = 42.9 ms, no faults, then the kernel.
  double copy   = 1e-6 + GiB / pcie;
  double kernel = 5e-6 + GiB / 2e12;
  CHECK(record(r, "read").end == Approx(copy + kernel).epsilon(0.01));
  CHECK(paging_of(r, gpu0).faults == 0);
  CHECK(paging_of(r, gpu0).migrated_h2d_bytes == GiB);
}

TEST_CASE("accessed_by_reads_go_over_pcie_at_its_rate_without_migrating", "[paging]")
{
  ClusterSpec c   = hand_cluster(1, GpuFabric::pcie, 1);
  ReplayOptions o = managed({MemCategory::weights});
  o.memory.accessed_by.set(static_cast<size_t>(MemCategory::weights));
  RunResult r = replay_in_child(c, one_kernel_reading_weights(gpu0, GiB, "read"), o);
  // The kernel (0.54 ms) runs beside its remote reads: 1 us + 2^30 B / 25 GB/s = 42.9 ms.
  CHECK(record(r, "read").end == Approx(1e-6 + GiB / pcie).epsilon(0.01));
  const PagingResult& p = paging_of(r, gpu0);
  CHECK(p.remote_bytes == GiB);
  CHECK(p.migrated_h2d_bytes == 0);
  CHECK(p.faults == 0);
  for (const auto& pool : r.pools)
    if (pool.device == gpu0)
      CHECK(pool.max_by_category[static_cast<size_t>(MemCategory::weights)] == 0);
}

TEST_CASE("two_gpus_faulting_behind_one_pcie_switch_share_its_uplink", "[paging]")
{
  ClusterSpec c   = hand_cluster(2, GpuFabric::pcie, 2); // both GPUs behind one 25 GB/s uplink
  ReplayOptions o = managed({MemCategory::weights});
  RunResult alone = replay_in_child(c, one_kernel_reading_weights(gpu0, GiB, "a"), o);
  OpDag both;
  both.track_accesses(true);
  for (const auto& [gpu, name] : {std::pair{gpu0, std::string("a")}, std::pair{gpu1, std::string("b")}}) {
    Tensor w = both.alloc(gpu, StreamKind::compute, gpu, MemCategory::weights, GiB, name + ".weights");
    OpId k   = both.add(kernel_op(gpu, 2e9, GiB, name));
    both.touch(k, w, GiB, false);
  }
  RunResult shared = replay_in_child(c, both, o);
  // Each migration gets half the uplink: 2^30 B / (12.5 GB/s x efficiency) = 141.6 ms
  // instead of 70.8 ms; the driver's 34 batches (476 us) are each GPU's own.
  double driver        = 34 * batch_s;
  double alone_migrate = record(alone, "a").paging_s - driver;
  CHECK(alone_migrate == Approx(1e-6 + GiB / (pcie * efficiency)).epsilon(0.01));
  for (const char* name : {"a", "b"})
    CHECK(record(shared, name).paging_s - driver == Approx(1e-6 + 2 * GiB / (pcie * efficiency)).epsilon(0.01));
}

namespace {

// STREAM over managed arrays a, b, c that the GPU wrote first, on a GPU of `hbm` bytes
// (0: as it is, CUDA context included): `iterations` passes of BabelStream's kernels
// copy (c = a), mul (b = s c), add (c = a + b), triad (a = b + s c) and dot (a . b), or
// of the triad alone. Returns the last triad's time.
struct TriadRun {
  double last_iteration_s = 0;
  PagingResult paging;
};

TriadRun triad(ClusterSpec c, double hbm, double footprint, int iterations, bool all_kernels = false)
{
  if (hbm > 0) {
    c.node.gpu.memory_bytes  = hbm;
    c.node.gpu.context_bytes = 0;
  }
  OpDag dag;
  dag.track_accesses(true);
  if (c.node.gpu.context_bytes > 0)
    dag.alloc(gpu0, StreamKind::compute, gpu0, MemCategory::context, c.node.gpu.context_bytes, "cuda_context");
  std::vector<Tensor> arrays;
  for (const char* n : {"a", "b", "c"})
    arrays.push_back(dag.alloc(gpu0, StreamKind::compute, gpu0, MemCategory::activations, footprint / 3, n));
  const Tensor &a = arrays[0], &b = arrays[1], &cc = arrays[2];
  auto kernel = [&](const std::string& name, std::vector<std::pair<const Tensor*, bool>> uses) {
    OpId k = dag.add(kernel_op(gpu0, footprint / 12, footprint / 3 * static_cast<double>(uses.size()), name));
    for (auto [t, write] : uses)
      dag.touch(k, *t, t->bytes, write);
  };
  for (int i = 0; i < iterations; ++i) {
    std::string n = std::to_string(i);
    if (all_kernels) {
      kernel("copy" + n, {{&a, false}, {&cc, true}});
      kernel("mul" + n, {{&cc, false}, {&b, true}});
      kernel("add" + n, {{&a, false}, {&b, false}, {&cc, true}});
    }
    kernel("triad" + n, {{&b, false}, {&cc, false}, {&a, true}});
    if (all_kernels)
      kernel("dot" + n, {{&a, false}, {&b, false}});
  }
  RunResult r          = replay_in_child(c, dag, managed({MemCategory::activations}));
  const OpRecord& last = record(r, "triad" + std::to_string(iterations - 1));
  return {last.end - last.start, paging_of(r, gpu0)};
}

} // namespace

TEST_CASE("a_working_set_of_1_5x_hbm_streamed_repeatedly_thrashes_every_chunk_each_pass", "[paging]")
{
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  // 1.5 GB of arrays on a 1 GB GPU. With the driver's FIFO order and a cyclic sweep, the
  // chunk needed next is always the one evicted longest ago: each pass faults in all
  // 1.5 GB and writes 1.5 GB back. Each 0.5 GB array is 238 full chunks (17 faults
  // each) and a tail of 877,824 B (14 big pages: ceil(0.51 x 14) = 8 faults):
  // 3 x (238 x 17 + 8) = 12,162 faults, ceil(12,162 / 256) = 48 batches.
  double footprint = 1.5e9;
  TriadRun t       = triad(c, 1e9, footprint, 3);
  double driver    = 48 * batch_s;
  double transfer  = 2 * (1e-6 + footprint / (pcie * efficiency));
  double kernel    = 5e-6 + footprint / 2e12;
  CHECK(t.last_iteration_s == Approx(driver + transfer + kernel).epsilon(0.01));
  CHECK(t.paging.thrashing_pages > 0);
}

TEST_CASE("streaming_past_hbm_is_a_step_in_slowdown_that_does_not_fall_as_oversubscription_grows", "[paging]")
{
  // The shape measured for STREAM on a V100 (uvm.md): the same few GB/s at 150 % and
  // 300 % of memory, against HBM speed below 100 %.
  ClusterSpec c = hand_cluster(1, GpuFabric::pcie, 1);
  auto slowdown = [&](double factor) {
    double hbm  = 0.5e9;
    TriadRun t  = triad(c, hbm, factor * hbm, 3);
    double fast = 5e-6 + factor * hbm / 2e12; // the same pass with the arrays in HBM
    return t.last_iteration_s / fast;
  };
  double fits = slowdown(0.9), s125 = slowdown(1.25), s150 = slowdown(1.5), s200 = slowdown(2.0);
  CHECK(fits == Approx(1.0).epsilon(0.01));
  CHECK(s125 > 50);
  CHECK(s150 >= s125 * 0.99);
  CHECK(s200 >= s150 * 0.99);
}

TEST_CASE("warm_weights_that_fit_start_on_the_gpu_and_fault_nothing", "[paging]")
{
  ClusterSpec c   = hand_cluster(1, GpuFabric::pcie, 1);
  ReplayOptions o = managed({MemCategory::weights});
  o.memory.warm   = true;
  RunResult r     = replay_in_child(c, one_kernel_reading_weights(gpu0, GiB, "read"), o);
  CHECK(record(r, "read").end == Approx(5e-6 + GiB / 2e12).epsilon(1e-9));
  CHECK(paging_of(r, gpu0).faults == 0);
  CHECK(paging_of(r, gpu0).migrated_h2d_bytes == 0);
}

TEST_CASE("warm_weights_beyond_hbm_start_on_the_host_for_the_part_that_does_not_fit", "[paging]")
{
  // 1.5 GiB of weights on a 1 GiB GPU: warm, the first 512 chunks stay on the GPU and the
  // last 256 (0.5 GiB) start on the host; one kernel reading all of them faults those in,
  // evicting the 256 oldest: 0.5 GiB each way.
  ClusterSpec c            = hand_cluster(1, GpuFabric::pcie, 1);
  c.node.gpu.memory_bytes  = GiB;
  c.node.gpu.context_bytes = 0;
  ReplayOptions o          = managed({MemCategory::weights});
  o.memory.warm            = true;
  RunResult r              = replay_in_child(c, one_kernel_reading_weights(gpu0, 1.5 * GiB, "read"), o);
  const PagingResult& p    = paging_of(r, gpu0);
  CHECK(p.migrated_h2d_bytes == 0.5 * GiB);
  CHECK(p.migrated_d2h_bytes == 0.5 * GiB);
  CHECK(p.evictions == 256);
}

TEST_CASE("stream_triad_over_managed_memory_on_a_v100_pcie_falls_from_hbm_speed_to_a_few_gb_s_past_capacity",
          "[paging][validation]")
{
  // Published (calibration/data/uvm.md): STREAM triad over cudaMallocManaged arrays on a
  // V100 PCIe 16 GB, 823 GB/s at a 12 GB footprint, 5.0 GB/s at 24 GB and at 48 GB.
  // The catalog's V100 PCIe on the PCIe Gen3 cloud node (12 GB/s uplink). Bandwidth is
  // the footprint over one pass, after two passes have settled the residency.
  ClusterSpec c;
  c.node          = node_preset("cloud-t4");
  c.node.gpu      = gpu_preset("v100-pcie-16gb");
  c.nodes         = 1;
  c.gpus_per_node = 1;
  auto bandwidth  = [&](double footprint) { return footprint / triad(c, 0, footprint, 3, true).last_iteration_s; };
  double at12 = bandwidth(12e9), at24 = bandwidth(24e9), at48 = bandwidth(48e9);
  WARN("STREAM triad, V100 PCIe: " << at12 / 1e9 << " GB/s at 12 GB (823 measured), " << at24 / 1e9 << " at 24 GB, "
                                   << at48 / 1e9 << " at 48 GB (5.0 measured)");
  // In HBM: the catalog's achievable bandwidth is this very measurement (less launch cost).
  CHECK(at12 == Approx(823e9).epsilon(0.02));
  // Past capacity the bandwidth falls by two orders of magnitude. At 300 % every kernel
  // migrates all it touches in and evicts as much back over Gen3 at the on-demand rate:
  // 2 x 48 GB / (12 GB/s x 0.607) = 13.2 s per triad, 3.6 GB/s, within a factor of two
  // of the 5.0 measured. At 150 % the driver's FIFO keeps two of the triad's three 8 GB
  // arrays resident (they were migrated last), so only one array moves each way per
  // kernel: 24 GB / 2.2 s = 10.8 GB/s, twice the 5.0 measured (not asserted closer: the
  // driver's thrashing throttling, which would explain the gap, is not modelled).
  CHECK(at24 < 823e9 / 50);
  CHECK(at48 > 2.5e9);
  CHECK(at48 < 10e9);
  CHECK(at48 <= at24);
}

TEST_CASE("first_touch_of_managed_memory_on_an_h100_takes_what_gpubench_measured_there", "[paging][calibration]")
{
  // The H100's profile measured first-touch migration (memwall-gpubench managed_fault:
  // 1 GiB in 171.1 ms, 6.3 GB/s, against 55.9 GB/s for pinned copies on the same
  // machine): the replay's defaults take the on-demand rate and the cost of a batch from
  // it. A kernel reading 1 GiB of host-resident managed weights on an H100 whose host
  // link is the GPU's own (no narrower uplink): 34 batches and the migration, within 5 %
  // of the measurement. The PCIe 3 defaults (7.4 / 12.2 of the copy rate) would have
  // said 32 ms.
  ClusterSpec c;
  c.node                      = node_preset("dgx-h100");
  c.node.pcie_uplink_bw       = 64e9;
  c.node.gpus_per_pcie_switch = 1;
  ReplayOptions o;
  o.memory      = managed_defaults(c.node.gpu);
  o.memory.warm = false;
  o.memory.managed.set(static_cast<size_t>(MemCategory::weights));
  CHECK(o.memory.migration_efficiency == Approx(6.3e9 / 55.9e9).epsilon(0.02));
  RunResult r = replay_in_child(c, one_kernel_reading_weights(gpu0, GiB, "read"), o);
  CHECK(record(r, "read").paging_s == Approx(0.1711).epsilon(0.05));
}

TEST_CASE("unified_memory_on_two_data_parallel_gpus_replays_every_op_while_a_paged_kernel_is_in_flight", "[paging]")
{
  // A gradient all-reduce (no managed pages) ending while the other rank's kernel still
  // faulted was taken for a paged kernel's step: "runtime failure: map::at", exit 3.
  nlohmann::json j = run_json("uvm_two_gpus", "hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                                              "training: {seq_len: 1024, global_batch: 16, micro_batch: 8}\n"
                                              "memory: {mode: unified}\n");
  CHECK(j["step_time_s"].get<double>() > 0);
  CHECK(j["fits"] == true);
}

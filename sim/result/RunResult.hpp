#pragma once
// What one replay records: per-op start/end, per-pool memory timelines with peaks and
// out-of-memory events, per-link traffic. Plain data, serializable (CBOR) so a replay
// can run in a forked child process and hand its result back (one SimGrid Engine per
// process, DESIGN.md §3). analysis/ reads this and never the simulator's internals.
#include "hwmodels/DeviceRef.hpp"
#include "sim/result/StepIntervals.hpp"
#include "workloads/dag/Op.hpp"
#include "workloads/inference/ServingStats.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace memwall {

using CategoryBytes = std::array<double, mem_category_count>;

struct OpRecord {
  std::string name;
  OpKind kind       = OpKind::kernel;
  StreamKind stream = StreamKind::compute;
  StepPhase phase   = StepPhase::setup;
  DeviceRef device;
  double start    = 0;
  double end      = 0;
  double bytes    = 0;
  double flops    = 0;
  double paging_s = 0;     // a kernel's wait on unified-memory faults, migrations and remote reads
  bool pageable   = false; // a copy staged through the driver's pinned buffer
};

struct MemoryEvent {
  double time           = 0;
  MemCategory category  = MemCategory::other;
  double category_bytes = 0; // the category's bytes after the event
  double total_bytes    = 0; // the pool's bytes after the event
};

struct OomEvent {
  std::string op;
  double time      = 0;
  double requested = 0;
  double free      = 0; // capacity minus what was in use before the request
};

struct PoolResult {
  DeviceRef device;
  std::string name;      // "node0.gpu0"
  std::string hardware;  // catalog id, e.g. "a100-sxm4-80gb"
  int count         = 1; // identical devices this one stands for
  double capacity   = 0;
  double peak_bytes = 0;
  double peak_time  = 0;
  CategoryBytes peak_by_category{}; // composition at the peak instant
  CategoryBytes max_by_category{};  // each category's own maximum
  std::vector<MemoryEvent> timeline;
  std::vector<OomEvent> ooms; // the first ones, up to a limit
  int64_t oom_count = 0;
  // A GPU whose tensors a framework's allocator served (MemoryPool.hpp): its name and
  // the most the device held, reserved segments plus what bypassed it; "" and 0 for none.
  std::string allocator;
  double peak_reserved_bytes = 0;
};

// Managed memory of one GPU at an instant: on the GPU, and on the host.
struct ManagedSample {
  double time           = 0;
  double resident_bytes = 0;
  double host_bytes     = 0;
};

// Unified memory on one GPU over a replay (sim/paging).
struct PagingResult {
  DeviceRef device;
  std::string name; // "node0.gpu0"
  int64_t faults            = 0;
  int64_t fault_batches     = 0;
  int64_t evictions         = 0; // 2 MB chunks sent back to the host
  double migrated_h2d_bytes = 0; // faulted in or prefetched
  double migrated_d2h_bytes = 0; // evicted
  double thrashing_pages    = 0; // 4 KB pages migrated in again after an eviction
  double remote_bytes       = 0; // read over PCIe without migrating
  double stall_s            = 0; // summed paging_s of its kernels
  double peak_demand_bytes  = 0; // most bytes the GPU's work held at once: its explicit allocations plus
                                 // all its managed memory, on the GPU or not (over capacity: oversubscribed)
  std::vector<ManagedSample> timeline;
};

struct LinkResult {
  std::string name;
  double bandwidth = 0;
  double bytes     = 0;
  double busy_s    = 0;
};

// A replayed trace's GPU kernels by class (gemm, attention, elementwise, other): how
// many, their time where they were recorded and on the GPU replayed (each alone on it);
// its NCCL collectives, whose replayed time is the collective model's.
struct RecordedClass {
  int64_t kernels   = 0;
  double recorded_s = 0, replayed_s = 0;
};
struct RecordedKernels {
  bool present = false;
  std::string recorded_on, replayed_on; // GPU preset ids
  std::map<std::string, RecordedClass> classes;
  int64_t collectives           = 0;
  double collectives_recorded_s = 0;
  // Kernels whose name said neither compute- nor memory-bound: timed as memory-bound.
  double unclassified_kernel_time_s = 0;
  int64_t ranks                     = 0;     // ranks replayed (the traces' world size, or workload.ranks)
  int64_t profiler_steps            = 0;     // torch.profiler's ProfilerStep#N spans the first trace holds
  bool memory_recorded              = false; // the traces carry the allocator's [memory] events
};

// The routing a mixture-of-experts run assumed (ExpertLoad): routed experts per GPU, the
// busiest GPU's token-expert pairs as a multiple of an even share, and the share of all
// pairs dropped at the capacity factor. Serving routes evenly.
struct MoeRouting {
  bool present           = false;
  double experts_per_gpu = 0;
  double busiest_share   = 0;
  double dropped_share   = 0;
};

// The fitted hardware profile that timed the GPUs' kernels, copies and collectives:
// how the run named it (catalog ID or a file), the measurements it was fitted on, and,
// laid over the shipped one, which parts came from where. Empty name: none (the
// catalog's estimated efficiencies).
// `timing`: where each part's timing came from (TimingSources.hpp), empty in results
// written before it was kept.
struct ProfileUsed {
  std::string name, source, parts;
  std::vector<std::pair<std::string, std::string>> timing;
};

struct RunResult {
  double makespan_s = 0;
  // From the workload and hardware, for throughput and MFU (filled by Simulation).
  double model_flops_per_step = 0; // summed over the DAG's kernels and the devices they stand for
  double tokens_per_step      = 0;
  int gpus                    = 0;
  double peak_flops_per_gpu   = 0; // at the step's compute dtype
  double power_w              = 0; // facility power: the nodes' system power per GPU x GPUs x PUE, else gpu_power_w
  double gpu_power_w          = 0; // the GPUs' alone: TDP x GPUs x PUE (0: TDP unknown)
  double usd_per_mwh          = 0; // the price of that energy
  std::vector<OpRecord> ops;
  StepIntervals step_intervals; // the breakdown's, when `ops` holds no record per op
  std::vector<PoolResult> pools;
  std::vector<LinkResult> links;
  std::vector<PagingResult> paging; // GPUs with managed memory; empty without
  ServingStats serving;             // inference runs: requests, KV cache over time
  RecordedKernels recorded;         // a replayed trace (workload.trace)
  MoeRouting moe;                   // MoE models
  ProfileUsed profile;
  // What the replay started: SimGrid activities and coalesced runs (which end on a
  // kernel timer, not as activities): what its cost grows with.
  int64_t activities = 0;
  int64_t op_count   = 0; // ops replayed, whether or not `ops` keeps their records
};

void to_json(nlohmann::json& j, const RunResult& r);
void from_json(const nlohmann::json& j, RunResult& r);

} // namespace memwall

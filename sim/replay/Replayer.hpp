#pragma once
// Replays an op DAG on a SimGrid platform, just in time (DESIGN.md §3): an op's
// activities are created and started from the completion callback of its last
// dependency; no actor per op, no pre-built activity graph. What it holds, each concern
// in its own class:
//
//   ActivityLauncher  an op's SimGrid activities (kernels, copies, host work, delays),
//                     the routes and what their links carried;
//   CollectiveReplay  collectives planned into phases of flows and run phase by phase;
//   Coalescer         runs of private ops of one stream replayed as one timed activity;
//   OrbitMirror       shadow ranks' flows run as one per orbit where nothing breaks the symmetry;
//   PagingReplay      unified memory: faults, migrations, evictions before a kernel runs;
//   ReplayRecords     a record per op, or the summary's intervals;
//   PoolTable, DueMemory  the memory pools, and runs' allocs and frees due on them.
//
// The Replayer drives them: it takes the DAG's ops (OpIndex), starts the ready ones,
// completes an op when its last activity ends and releases its successors.
#include "sim/allocator/DeviceAllocator.hpp"
#include "sim/paging/ManagedMemory.hpp"
#include "sim/platform/Platform.hpp"
#include "sim/replay/ActivityLauncher.hpp"
#include "sim/replay/ChainState.hpp"
#include "sim/replay/Coalescer.hpp"
#include "sim/replay/CollectiveReplay.hpp"
#include "sim/replay/DueMemory.hpp"
#include "sim/replay/OpIndex.hpp"
#include "sim/replay/OrbitMirror.hpp"
#include "sim/replay/PagingReplay.hpp"
#include "sim/replay/PoolTable.hpp"
#include "sim/replay/ReplayDrive.hpp"
#include "sim/replay/ReplayRecords.hpp"
#include "sim/result/RunResult.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/dag/WorkloadSource.hpp"

#include <exception>
#include <memory>
#include <string>

namespace memwall {

class ReplayProgress;

struct ReplayOptions {
  std::string collective_algorithm = "auto";
  bool record_ops                  = true;
  // Start only the collective flows that can affect what the replay runs (FlowFold.hpp).
  // The same times either way; off only to check that.
  bool fold_collectives = true;
  // A progress line on stderr when it is a terminal (ReplayProgress.hpp).
  bool progress = false;
  // Runs of ops on one stream that use no resource another stream uses, and that
  // nothing outside the run waits on, replay as one timed activity (Coalescer.hpp).
  // The same times, memory and link figures either way; off only to check that.
  bool coalesce = true;
  // Shadow ranks' flows that are images of one another under the rotation of their
  // block of GPUs run as one where nothing breaks the symmetry (OrbitFold.hpp). The same times, memory
  // and link figures either way; off only to check that.
  bool mirror_orbits = true;
  // Keep no record per op, only the intervals StepReport's breakdown reads (the ops
  // of the first GPU that holds memory, and host compute on its node: StepIntervals):
  // a --json run or a sweep point needs no more; -o and --trace need every op. Ignored
  // under unified memory, whose stall figures are read from every kernel's record.
  bool summary_records_only = false;
  // Each pool's memory timeline (an event per alloc and free): -o and --trace show it;
  // the summary reads only the peaks.
  bool memory_timelines = true;
  // Unified memory: which categories are managed, hints, driver costs (off when none).
  UnifiedMemoryConfig memory{};
  // The allocator that serves each GPU's tensors (allocator/DeviceAllocator.hpp; none:
  // the pools count tensor bytes as they are), its name resolved once.
  AllocatorChoice allocator{};
  // The GPU a recorded trace's kernel times were measured on (null: as recorded).
  std::shared_ptr<const GpuSpec> recorded_on{};
};

class Replayer {
public:
  Replayer(const OpDag& dag, const Platform& platform, ReplayOptions options);
  // A workload that grows as the replay runs: `source.dag()` is replayed, and whenever
  // all its ops have completed, source.next() is asked for more.
  Replayer(WorkloadSource& source, const Platform& platform, ReplayOptions options);
  ~Replayer();
  Replayer(const Replayer&)            = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Runs the SimGrid engine to completion. Call once per process.
  RunResult run();

private:
  void start(OpId id);
  // `end`: the op's end as its record keeps it (a run's prefix sum), the clock if < 0.
  void complete(OpId id, double end = -1);
  void on_activity_done(size_t activity);
  void apply_memory_op(OpId id, const Op& op, double now);
  void drain_ready();
  // Runs SimGrid's engine until the DAG (and the workload source, if any) has nothing left.
  void replay_loop(simgrid::s4u::Engine* engine);
  std::string stall_message() const;
  // Registers ops [index_.taken, dag size) that the source appended: their unfinished
  // dependencies, the nodes they run on, and which GPUs have HBM shared by concurrent
  // kernels.
  void take_new_ops();
  // The coalesced runs whose date the clock has reached.
  void end_runs();
  void finish_run(const Coalescer::Run& run);
  RunResult collect();
  // Runs work, keeping what it throws in drive_.failure (a template: once per activity
  // completion, no std::function).
  template <typename Work>
  void guarded(Work&& work)
  {
    try {
      work();
    } catch (...) {
      drive_.failure = std::current_exception();
    }
  }

  const OpDag& dag_;
  const Platform& platform_;
  ReplayOptions options_;
  // The state of each concern, in its own type (each header says what it holds):
  OpIndex index_;     // the ops taken, what waits on what, what is ready
  ChainState chains_; // chains' members and their derived facts
  ActivityLauncher launcher_;
  PoolTable pools_;
  DueMemory due_memory_; // runs' allocs and frees, applied when their pool is next touched
  ReplayRecords records_;
  PagingReplay paging_;
  CollectiveReplay collectives_;
  OrbitMirror mirror_;
  Coalescer runs_;
  ReplayDrive drive_; // progress, the workload source, a failure inside a callback
};

} // namespace memwall

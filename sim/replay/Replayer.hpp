#pragma once
// Replays an op DAG on a SimGrid platform, just in time (DESIGN.md §3): an op's
// activities are created and started from the completion callback of its last
// dependency; no actor per op, no pre-built activity graph.
//
//   kernel       = Exec of (F / (peak x eff) + overhead) on the GPU host
//                  beside a GPU->same-GPU flow of its bytes over the HBM link (latency =
//                  overhead), so it lasts overhead + max(F/P, B/W) alone and shares
//                  compute and bandwidth fairly with concurrent kernels and copies;
//   host_compute = the same on a CPU socket and its DRAM link;
//   copy         = one flow over the route between the two memories;
//   collective   = the phases of its CollectiveAlgorithm, one after another;
//   alloc / free = instantaneous, applied to the pool's occupancy timeline;
//   under unified memory (ReplayerPaging.cpp) a kernel first waits for its faults:
//                  the driver's time per fault batch, eviction write-backs and
//                  migrations as flows on the GPU's PCIe route, one after another.
#include "sim/collective/CollectiveAlgorithm.hpp"
#include "sim/collective/FlowFold.hpp"
#include "sim/paging/ManagedMemory.hpp"
#include "sim/paging/PrefetchPolicy.hpp"
#include "sim/platform/Platform.hpp"
#include "sim/replay/ActivitySlots.hpp"
#include "sim/replay/ChainState.hpp"
#include "sim/replay/CollectiveRuns.hpp"
#include "sim/replay/DueMemory.hpp"
#include "sim/replay/MemoryPool.hpp"
#include "sim/replay/OpIndex.hpp"
#include "sim/replay/OrbitMirror.hpp"
#include "sim/replay/PagingState.hpp"
#include "sim/replay/PoolTable.hpp"
#include "sim/replay/ReplayDrive.hpp"
#include "sim/replay/ReplayRecords.hpp"
#include "sim/replay/RouteTable.hpp"
#include "sim/replay/RunQueue.hpp"
#include "sim/replay/StreamFacts.hpp"
#include "sim/result/RunResult.hpp"
#include "sim/result/StepIntervals.hpp"
#include "sim/timing/KernelTimer.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/dag/StepSource.hpp"

#include <simgrid/s4u/Activity.hpp>

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

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
  // nothing outside the run waits on, replay as one timed activity (ReplayerRuns.cpp).
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
  // The allocator that serves each GPU's tensors (allocator/DeviceAllocator.hpp; "":
  // none, the pools count tensor bytes as they are).
  std::string allocator{};
  // The GPU a recorded trace's kernel times were measured on (null: as recorded).
  std::shared_ptr<const GpuSpec> recorded_on{};
};

class Replayer {
public:
  Replayer(const OpDag& dag, const Platform& platform, ReplayOptions options);
  // A workload that grows as the replay runs: `source.dag()` is replayed, and whenever
  // all its ops have completed, source.next() is asked for more.
  Replayer(StepSource& source, const Platform& platform, ReplayOptions options);
  ~Replayer();
  Replayer(const Replayer&)            = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Runs the SimGrid engine to completion. Call once per process.
  RunResult run();

private:
  using Activity = ReplayActivity;
  bool paging_on() const { return options_.memory.enabled(); }
  GpuPaging& gpu_paging(const DeviceRef& gpu);
  DeviceRef host_of(const DeviceRef& gpu) const;
  double hbm_room(const DeviceRef& gpu);
  // Applies a Migration to the pools' timelines and the GPU's counters.
  void apply(const DeviceRef& gpu, const Migration& m, const OpName& what);
  void note_demand(const DeviceRef& gpu); // PagingResult::peak_demand_bytes
  void alloc_with_paging(OpId id, const Op& op);
  bool free_managed(const Op& op);
  void start_paged_kernel(OpId id, const Op& op);
  std::vector<OpId> kernels_ahead(OpId id, const Op& op, int count) const;
  bool start_paging_step(OpId id);
  // A transfer between `gpu` and its host (and the same for each shadow rank), charged
  // to paging; `scale` stretches it (on-demand migration is slower than a copy).
  void start_paging_flow(OpId id, const DeviceRef& gpu, bool to_gpu, double bytes, double scale);
  void finish_paged_kernel(OpId id);

  // Chains (OpDag::end_capture): a chain op runs its members in turn, chains_.member[op]
  // the one it is at; each member completes as an op whose one successor is the next.
  // What the replay derives from a chain's members (which may join a run) is derived
  // once per stored chain and batch, not once per repetition.
  // One unit of a stream's work, what a coalesced run is made of: op `id`, or member
  // `member` of chain op `id`.
  struct RunMember {
    OpId id         = 0;
    uint32_t member = 0;
  };
  const Op& member_op(RunMember s) const;
  const Op& current_op(OpId id) const { return member_op({id, chains_.member[id - index_.base]}); }
  bool member_private(RunMember s) const;
  bool member_private(RunMember s, const ChainInfo* chain) const; // `chain`: s's chain's, null for an op
  // A chain member's facts, null where they were not derived in this batch.
  const MemberFacts* member_facts(const ChainInfo& chain, uint32_t member) const
  {
    return chain.batch == collectives_.batch && member < chain.members.size() ? &chain.members[member] : nullptr;
  }
  // Calls f for every op of entries [from, to): a chain's members once per stored
  // chain and call (what it derives holds for every repetition). A template, so that
  // a serving run's per-iteration passes over its ops stay inlined loops.
  template <typename F>
  void visit_ops(size_t from, size_t to, F&& f)
  {
    ++chains_.visits;
    for (size_t v = from; v < to; ++v) {
      const Op& op = dag_.op(static_cast<OpId>(v));
      if (op.kind != OpKind::chain) {
        f(op);
      } else if (chains_.seen[op.chain] != chains_.visits) {
        chains_.seen[op.chain] = chains_.visits;
        for (const Op& m : dag_.chain(op.chain))
          f(m);
      }
    }
  }

  void start(OpId id);
  // `end`: the op's end as its record keeps it (a run's prefix sum), the clock if < 0.
  void complete(OpId id, double end = -1);
  void on_activity_done(size_t activity);
  // `payload`: what the flow transfers in time, when it differs from the bytes it
  // accounts to the links (default: the bytes).
  void start_flow(OpId op, const DeviceRef& src, const DeviceRef& dst, double bytes, double payload = -1);
  void start_delay(OpId op, double seconds); // on the timer: shares nothing
  void start_exec(OpId op, simgrid::s4u::Host* host, double work);
  // Keeps a started activity in a free slot of slots_.activities; its handle carries the slot.
  void add_activity(Activity a, simgrid::s4u::Activity& handle);
  void start_kernel(OpId id, const Op& op);
  // A kernel alone on its HBM runs as one Exec: its bytes and busy time on the HBM link
  // are added here, the figures its flow would have produced.
  void account_hbm_alone(const Op& op, const KernelTiming& t);
  // What the kernel's flow would have kept its HBM link busy for, -1 when it accounts
  // nothing there (no bytes, or measured where it was recorded).
  static double hbm_busy_s(const Op& op, const KernelTiming& t);
  void account_hbm(int hbm_route, double bytes, double busy_s);
  int hbm_route(const DeviceRef& gpu); // the route of the GPU's HBM link, found once
  void start_copy(OpId id, const Op& op, const DeviceRef& src, const DeviceRef& dst);
  double copy_payload(const Op& op, const DeviceRef& src, const DeviceRef& dst);
  double measured_payload(int route, double bytes, double latency_s, double bandwidth) const;
  void start_host_compute(OpId id, const DeviceRef& socket, const Op& op);
  // Where a shadow rank's traffic goes: `d` as seen from `peer` instead of `rep` (a GPU
  // as many ranks on from `d` as `peer` is from `rep`, ranks numbered node by node).
  DeviceRef shadow_of(const DeviceRef& rep, const DeviceRef& peer, const DeviceRef& d) const;
  // Every route an op's own activities cross, collectives' flows aside: a copy's (and
  // its shadow ranks'), a pageable copy's pass through host DRAM, host work's DRAM (and
  // its shadows'), a kernel's HBM. What coalescing claims per stream and what flow
  // folding watches.
  void for_each_route(const Op& op, const std::function<void(const DeviceRef&, const DeviceRef&)>& f) const;
  PlannedCollective& planned(const Op& op);
  // Every flow of the collective, its shadow ranks' concurrent groups' included.
  std::vector<CollectivePhase> plan_collective(const Op& op);
  // Ops [from, to): what the replay will run, and every flow their collectives would
  // start, so that plans keep only the flows that can matter (FlowFold.hpp).
  void fold_batch(size_t from, size_t to);
  const std::vector<int>& flow_links(const Flow& f);
  // NCCL's fitted efficiency and latency inside an NVSwitch node (CollectiveTiming.hpp).
  void calibrate_collective(const Op& op, const std::vector<DeviceRef>& group, std::vector<CollectivePhase>& phases);
  // Before a replay of one batch: which flows run for their whole orbit (OrbitFold.hpp),
  // and the capacity their shared links then run at (restored by restore_links).
  void mirror_orbits();
  // GPU i of a block of mirror_.block GPUs turned by k inside its block.
  DeviceRef turned(const DeviceRef& gpu, int k) const;
  bool add_copy_orbit(const Op& op);
  void add_collective_orbits(const PlannedCollective& plan);
  std::vector<int> orbit_routes(const DeviceRef& src, const DeviceRef& dst);
  void restore_links();
  // A copy whose orbit is mirrored: its canonical image alone (the others would be
  // left out one by one). False when it is not.
  bool start_mirrored_copy(OpId id, const Op& op);
  bool start_collective_phase(OpId id);
  void measure_collective(CollectiveRun& run);

  // Coalescing (ReplayerRuns.cpp).
  // Which of ops [from, to) may join a run: their resources are their stream's alone.
  void find_private_ops(size_t from, size_t to);
  int stream_key(const Op& op);
  // A run member's facts: private or not (find_private_ops) and, if it is, a kernel's time
  // alone and HBM busy time, a collective's plan.
  MemberFacts facts_of(const Op& op, bool priv);
  // A member's own time when it runs alone, if known without replaying it (it is private,
  // and a collective was timed); a kernel's HBM busy time in `hbm_busy` (its link
  // figures), a collective's plan in `plan` (its link figures).
  static bool member_duration(const Op& op, const MemberFacts& facts, double& seconds, double& hbm_busy,
                              const PlannedCollective*& plan);
  bool start_run(OpId head);
  void finish_run(const RunInFlight& run);
  void open_record(OpId id, const Op& op, double now);
  void apply_memory_op(OpId id, const Op& op, double now);
  int route_of(const DeviceRef& src, const DeviceRef& dst)
  {
    return routes_.index(platform_.host(src), platform_.host(dst));
  }
  MemoryPool& pool(const DeviceRef& d);
  void drain_ready();
  // Runs SimGrid's engine until the DAG (and the step source, if any) has nothing left.
  std::string stall_message() const;
  void replay_loop(simgrid::s4u::Engine* engine);
  // Registers ops [index_.taken, dag size) that the source appended: their unfinished
  // dependencies, the nodes they run on, and which GPUs have HBM shared by concurrent
  // kernels.
  void take_new_ops();
  RunResult collect();

  const OpDag& dag_;
  const Platform& platform_;
  ReplayOptions options_;
  std::unique_ptr<CollectiveAlgorithm> collective_;
  KernelTimer kernel_timer_;
  // The state of each concern, in its own type (each header says what it holds):
  OpIndex index_;              // the ops taken, what waits on what, what is ready
  ReplayRecords records_;      // per op, or the summary's intervals
  ActivitySlots slots_;        // SimGrid activities in flight
  CollectiveRuns collectives_; // plans, running collectives, the batch's flow fold
  OrbitMirror mirror_;         // flows run for their orbit
  RunQueue runs_;              // coalesced runs in flight
  ChainState chains_;          // chains' members and their derived facts
  DueMemory due_memory_;       // runs' allocs and frees, applied when their pool is next touched
  RouteTable routes_;
  PoolTable pools_;
  StreamFacts streams_;
  PagingState paging_; // unified memory
  ReplayDrive drive_;  // progress, the step source, a failure inside a callback

  bool summary_only() const { return options_.summary_records_only && !paging_on(); }
  OpRecord* record(OpId id) { return summary_only() ? nullptr : &records_.ops[id]; }
  // An op's record from its start to its end, or its interval in summary mode.
  void close_record(OpId id, const Op& op, double end);
  void record_span(OpId id, const Op& op, double start, double end);
  void keep_records(size_t from, size_t to);
  void arm_run_timer(double date);
  void end_runs(); // those whose date the clock has reached
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
};

} // namespace memwall

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
//   alloc / free = instantaneous, applied to the pool's occupancy timeline.
#include "MemoryPool.hpp"
#include "OpDag.hpp"
#include "Platform.hpp"
#include "RunResult.hpp"
#include "StepSource.hpp"
#include "collective/CollectiveAlgorithm.hpp"

#include <simgrid/s4u/Activity.hpp>

#include <map>
#include <set>
#include <memory>
#include <vector>

namespace memwall {

class ReplayProgress;

struct ReplayOptions {
  std::string collective_algorithm = "auto";
  bool record_ops = true;
  // Start only the collective flows that can affect a replayed node (ReplayedFlows.hpp).
  // The same times either way; off only to check that.
  bool fold_collectives = true;
  // A progress line on stderr when it is a terminal (ReplayProgress.hpp).
  bool progress = false;
};

class Replayer {
public:
  Replayer(const OpDag& dag, const Platform& platform, ReplayOptions options);
  // A workload that grows as the replay runs: `source.dag()` is replayed, and whenever
  // all its ops have completed, source.next() is asked for more.
  Replayer(StepSource& source, const Platform& platform, ReplayOptions options);
  ~Replayer();
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Runs the SimGrid engine to completion. Call once per process.
  RunResult run();

private:
  struct Route {
    std::vector<int> links;
    double latency = 0;
  };
  struct Activity {
    OpId op = 0;
    int route = -1; // index into routes_, -1 for an Exec
    double bytes = 0;
    simgrid::s4u::ActivityPtr handle;
  };
  struct CollectiveRun {
    std::vector<CollectivePhase> phases;
    size_t next = 0;
    int repeats_done = 0; // of phases[next]
  };

  void start(OpId id);
  void complete(OpId id);
  void on_activity_done(size_t activity);
  void start_flow(OpId op, const DeviceRef& src, const DeviceRef& dst, double bytes);
  void start_exec(OpId op, simgrid::s4u::Host* host, double work);
  void start_kernel(OpId id, const Op& op);
  void start_copy(OpId id, const Op& op, const DeviceRef& src, const DeviceRef& dst);
  void start_host_compute(OpId id, const DeviceRef& socket, const Op& op);
  // Where a shadow rank's traffic goes: `d` as seen from `peer` instead of `rep`.
  DeviceRef shadow_of(const DeviceRef& rep, const DeviceRef& peer, const DeviceRef& d) const;
  std::vector<CollectivePhase> plan_collective(const Op& op);
  void fold_collective(std::vector<CollectivePhase>& phases);
  // NCCL's fitted efficiency and latency inside an NVSwitch node (CollectiveTiming.hpp).
  void calibrate_collective(const Op& op, const std::vector<DeviceRef>& group, std::vector<CollectivePhase>& phases);
  bool start_collective_phase(OpId id);
  int route_index(simgrid::s4u::Host* src, simgrid::s4u::Host* dst);
  MemoryPool& pool(const DeviceRef& d);
  void drain_ready();
  // Runs the engine until the DAG (and the step source, if any) has nothing left.
  std::string stall_message() const;
  void replay_loop(simgrid::s4u::Engine* engine);
  // Registers ops [taken_, dag size) that the source appended: their unfinished
  // dependencies, the nodes they run on, and which GPUs have HBM shared by concurrent
  // kernels.
  void take_new_ops();
  RunResult collect();

  const OpDag& dag_;
  const Platform& platform_;
  ReplayOptions options_;
  std::unique_ptr<CollectiveAlgorithm> collective_;

  // Per op the DAG still holds (op id - base_):
  std::vector<uint32_t> waiting_on_;   // unfinished dependencies
  std::vector<uint32_t> running_acts_; // unfinished activities of a started op
  std::vector<OpRecord> records_;
  std::vector<OpId> ready_;
  std::vector<Activity> activities_;
  std::vector<simgrid::s4u::ActivityPtr> parked_; // released on the next time advance
  std::map<OpId, CollectiveRun> collectives_;
  std::map<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>, int> route_ids_;
  std::vector<Route> routes_;
  std::vector<simgrid::s4u::Link*> links_;
  std::map<simgrid::s4u::Link*, int> link_ids_;
  std::vector<int> link_active_;
  std::vector<double> link_busy_since_, link_busy_, link_bytes_;
  std::map<DeviceRef, std::unique_ptr<MemoryPool>> pools_;
  std::set<int> replayed_nodes_;   // nodes where some op of the DAG runs
  std::set<DeviceRef> shared_hbm_; // GPUs whose kernels may overlap (see take_new_ops)
  std::map<DeviceRef, StreamKind> kernel_stream_;
  StepSource* source_ = nullptr;
  size_t taken_       = 0;
  OpId base_          = 0; // the DAG's first_id() when ops were last taken
  size_t completed_ = 0;
  ReplayProgress* progress_ = nullptr; // while run() runs
  bool draining_    = false;
};

} // namespace memwall

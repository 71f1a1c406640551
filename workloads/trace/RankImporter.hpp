#pragma once
// One rank's PyTorch profiler trace turned into ops of the DAG (import_traces runs one per
// trace; TraceImporter.hpp states the rules).
#include "workloads/dag/OpDag.hpp"
#include "workloads/trace/KinetoTrace.hpp"
#include "workloads/trace/TraceAllocations.hpp"
#include "workloads/trace/TraceImporter.hpp"
#include "workloads/trace/TraceNames.hpp"

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace memwall {

// Builds one rank's ops.
class RankImporter {
public:
  RankImporter(const KinetoTrace& t, OpDag& dag, const std::map<int, DeviceRef>& gpus, const TraceImport& how,
               std::vector<OpId>& collectives, bool leads);
  size_t collectives_seen() const { return next_collective_; }

  void run();

private:
  struct Item {
    enum Type : uint8_t { memory, call, orphan } type; // memory first at equal times
    int64_t time;
    uint32_t index;
  };
  struct Launched {
    OpId id;
    int64_t end_ns;
  };

  bool cuda_memory(const TraceMemoryEvent& m) const { return allocations_.cuda_memory(m); }

  void index_launches();

  std::vector<Item> timeline() const;

  // The host step ending at `time` (the time since the host's last step), and the
  // waits a synchronising call left for it.
  OpId host_until(int64_t time);

  const DeviceRef& first_gpu() const { return gpus_.begin()->second; }

  void on_call(const TraceCall& c);

  // The host reached the call at its start and went on when it returned: it waits for
  // every stream's latest op that had ended by then.
  void synchronise(const TraceCall& c);

  void on_orphan(uint32_t g) { add_gpu_op(g, host_until(t_.gpu_ops[g].start_ns)); }

  // The op a GPU activity becomes: a kernel with its recorded time; replayed elsewhere
  // than where it was recorded, a host copy over the links and an NCCL kernel as the
  // collective on the modelled topology.
  // What each distinct name is, worked out once.
  struct Named {
    OpName name;
    KernelKind kind;
  };
  const Named& named(const TraceGpuOp& g);

  Op gpu_op(const TraceGpuOp& g, std::vector<OpId>& deps);

  // The GPUs of a process group smaller than the world: its ranks placed as they sit
  // around this rank's (rank r on the GPU this rank's is on, plus r - this rank), where
  // the trace lists them and they fit; else the `members` consecutive GPUs holding this
  // one (Megatron's tensor-parallel groups).
  int32_t subgroup(const TraceCollective& c, const DeviceRef& mine, int members);

  void add_gpu_op(uint32_t index, OpId host);

  const KinetoTrace& t_;
  OpDag& dag_;
  const std::map<int, DeviceRef>& gpus_;
  const TraceImport& how_;
  std::vector<OpId>& collectives_; // the leading rank's collectives, in order
  bool leads_;
  TraceAllocations allocations_;
  size_t next_collective_ = 0;
  std::vector<std::optional<Named>> named_;       // per KinetoTrace::names
  std::map<std::vector<int>, int32_t> subgroups_; // GPU slots -> OpDag group
  // Stream waits the trace names (cuda_sync events): by their cudaStreamWaitEvent call;
  // each cudaEventRecord call's view of every stream's last op; the waits the next op of
  // a stream takes.
  std::unordered_map<int64_t, const TraceStreamWait*> waits_by_call_;
  std::unordered_map<int64_t, std::map<std::pair<int, int64_t>, OpId>> recorded_tails_;
  std::map<std::pair<int, int64_t>, std::vector<OpId>> stream_waits_;
  std::map<int, std::map<int64_t, StreamKind>> streams_;
  std::vector<std::vector<uint32_t>> launched_by_;                    // per call: the GPU ops it launched
  std::vector<uint32_t> orphans_;                                     // GPU ops no call launched
  std::map<std::pair<int, int64_t>, std::vector<Launched>> launched_; // per (device, stream)
  std::vector<OpId> waits_;
  bool wait_pending_ = false;
  int64_t origin_ = 0, cpu_ns_ = 0;
  OpId host_ = OpDag::none;
};

} // namespace memwall

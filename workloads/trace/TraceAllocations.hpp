#pragma once
// One rank's CUDA allocator events ([memory] events of a PyTorch profiler trace) as
// allocs and frees of its GPUs' memory, for TraceImporter.
//
// An allocation's category comes from the CPU ops open on its thread when it was made
// (TraceNames' scope_category: inside the optimizer step, optimizer state; inside a
// backward, gradients; ...). What was allocated before the trace started (a GPU's
// first "Total Allocated" less that event's bytes) is one allocation at the start, and
// frees of blocks it holds are taken from it. A GPU without allocator events still gets
// a pool (0 B), so that it reports its memory.
#include "workloads/dag/OpDag.hpp"
#include "workloads/trace/KinetoTrace.hpp"

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace memwall {

class TraceAllocations {
public:
  // `gpus`: the trace's CUDA device ids and the cluster GPUs they replay on.
  TraceAllocations(const KinetoTrace& t, OpDag& dag, const std::map<int, DeviceRef>& gpus)
      : t_(t), dag_(dag), gpus_(gpus)
  {}
  // Whether the event is a CUDA allocation or free of one of this rank's GPUs.
  bool cuda_memory(const TraceMemoryEvent& m) const { return m.device_type == 1 && gpus_.count(m.device_id); }
  // The memory each GPU held when the trace began; call before the first event.
  void allocate_before_trace();
  // An allocation or free, issued on the host's stream at this point of its order.
  void on_memory(const TraceMemoryEvent& m);

private:
  // The CPU ops on `tid` open at `ts` (memory events come in time order: each thread's
  // stack is walked forward once).
  std::vector<const std::string*> scope_at(int64_t tid, int64_t ts);

  const KinetoTrace& t_;
  OpDag& dag_;
  const std::map<int, DeviceRef>& gpus_;
  struct Scope {
    bool ready  = false;
    size_t next = 0;                     // the thread's next op in KinetoTrace::cpu_ops
    std::vector<const TraceCpuOp*> open; // its ops open at the last event, outermost first
  };
  std::map<int64_t, Scope> scopes_;
  std::map<int, std::unordered_map<uint64_t, Tensor>> live_; // per device: by address
  std::map<int, Tensor> before_;                             // per device
  std::map<int, int64_t> before_left_;
};

} // namespace memwall

#pragma once
// What memwall keeps of one rank's PyTorch profiler trace (Kineto's Chrome trace JSON,
// what torch.profiler and Holistic Trace Analysis write): the GPU activities, the CUDA
// runtime calls that launched or waited for them, and the caching allocator's events.
// Times are integer nanoseconds on the trace's clock (its `ts` are microseconds with
// three decimals: a double would lose the last digit at today's epoch offsets).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace memwall {

// A collective as NCCL's kernel records it (args "Collective name", "In msg nelems", ...).
struct TraceCollective {
  std::string name; // "allreduce", "allgather", "reduce_scatter", "broadcast", ...
  int64_t in_elements = 0, out_elements = 0;
  int group_size = 0;
  std::string dtype;      // "Float", "BFloat16", ...
  std::vector<int> ranks; // "Process Group Ranks" when present
};

struct TraceGpuOp {
  enum class Kind : uint8_t { kernel, memcpy, memset };
  Kind kind        = Kind::kernel;
  int64_t start_ns = 0, dur_ns = 0;
  int device          = 0;
  int64_t stream      = 0;
  int64_t correlation = -1; // links to its TraceCall
  double bytes        = 0;  // memcpy / memset
  uint32_t name       = 0;  // KinetoTrace::names: kernel name, or "Memcpy HtoD (Pinned -> Device)", ...
  int collective      = -1; // index into KinetoTrace::collectives for NCCL kernels
};

struct TraceCall {
  enum class Kind : uint8_t { launch, sync, launch_and_sync, wait_event, event_record, other };
  Kind kind        = Kind::other;
  int64_t start_ns = 0, dur_ns = 0;
  int64_t tid         = 0;
  int64_t correlation = -1;
};

// A stream's wait for an event, as traces with CUDA sync events record it (Kineto's
// "cuda_sync" events, torch.profiler's enable_cuda_sync_events): the ops issued on
// `stream` after the cudaStreamWaitEvent call `call_correlation` wait for what
// `wait_on_stream` had been given when the cudaEventRecord call `record_correlation` ran.
struct TraceStreamWait {
  int device     = 0;
  int64_t stream = 0, wait_on_stream = -1;
  int64_t call_correlation = -1, record_correlation = -1;
};

// A CPU op or annotation ("aten::linear", "Optimizer.step#Adam.step", ...): the scope
// an allocation happened in says what it holds.
struct TraceCpuOp {
  int64_t start_ns = 0, dur_ns = 0;
  int64_t tid   = 0;
  uint32_t name = 0; // KinetoTrace::names
};

// One `[memory]` instant event of the caching allocator: an allocation (bytes > 0) or
// a free (bytes < 0) at `addr`, and the device's totals right after it.
struct TraceMemoryEvent {
  int64_t ts_ns           = 0;
  int64_t tid             = 0;
  int device_type         = 0; // 1: CUDA; 0: CPU
  int device_id           = -1;
  uint64_t addr           = 0;
  int64_t bytes           = 0;
  int64_t total_allocated = 0, total_reserved = 0;
};

struct KinetoTrace {
  std::string file;
  int rank = 0, world_size = 1;   // distributedInfo; 0 and 1 without it
  std::string gpu_name;           // deviceProperties[0].name, "" when absent
  double gpu_memory_bytes = 0;    // deviceProperties[0].totalGlobalMem, 0 when absent
  std::vector<std::string> names; // the GPU activities' distinct names (a million kernels have a few hundred)
  std::vector<TraceGpuOp> gpu_ops;
  std::vector<TraceCall> calls;
  std::vector<TraceCpuOp> cpu_ops; // sorted by thread, then start
  std::vector<TraceStreamWait> stream_waits;
  std::vector<TraceMemoryEvent> memory;
  std::vector<TraceCollective> collectives;
  // A trace memwall exported (`memwall export`): each event's op (args.memwall, with
  // its id and dependencies) and the DAG's groups and ranks (top-level "memwall").
  std::vector<nlohmann::json> memwall_ops;
  nlohmann::json memwall_dag;
};

// Reads a trace (gzip or plain JSON), streaming: memory grows with the GPU activities,
// runtime calls and allocator events kept, not with the file. InputError naming the
// file when it is not JSON, not a Chrome trace (no traceEvents) or holds no GPU
// activity.
KinetoTrace read_kineto_trace(const std::string& path);

} // namespace memwall

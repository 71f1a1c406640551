#pragma once
// Turns PyTorch profiler traces (one per rank) into an op DAG that replays them.
//
// What becomes what:
//   GPU kernels, memcpys, memsets   ops on their GPU and stream, timed as recorded
//   CUDA runtime calls              the host's issue order: each launch is a host step
//                                   (the time since the host's previous step, kept as
//                                   a fixed delay: CPU-bound stretches stay) the GPU
//                                   op depends on
//   cudaStreamWaitEvent             with a cuda_sync event naming it: the waiting stream's
//                                   next op waits for the op the other stream had last
//                                   been given at the cudaEventRecord; without (older
//                                   traces): the next op launched waits for the other
//                                   streams' latest ops, kept only where the recording
//                                   agrees (they ended before it began)
//   synchronising calls             the host waits for the ops they waited for in the
//                                   recording (every stream's latest op that had ended
//                                   when the call returned)
//   [memory] events                 allocations and frees on their GPU in the host's
//                                   order, their category from the CPU ops they were
//                                   made in; what was allocated before the trace started
//                                   (its first "Total Allocated" less that event) is one
//                                   allocation at the start
// Each rank's file is one GPU of the cluster, in the order given (a file holding several
// devices takes as many). A rank's threads are merged into one issue order (PyTorch's
// main and autograd threads take turns).
#include "hwmodels/ClusterSpec.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/trace/KinetoTrace.hpp"

namespace memwall {

struct TraceImport {
  bool same_gpu = true; // replayed on the GPU the traces were recorded on
  int ranks     = 0;    // 0: the recorded world_size (one per trace as recorded); more: data-parallel replicas
  // Set by import_traces. As recorded (on the same GPU, with the recorded world_size):
  // every GPU activity keeps its recorded time. Otherwise host copies run over the
  // modelled links and NCCL kernels become collectives of all `ranks` on the modelled
  // topology (the first trace's rank runs each; the others wait for it).
  bool as_recorded           = true;
  const ClusterSpec* cluster = nullptr;
  int32_t group              = -1;
};

OpDag import_traces(const std::vector<KinetoTrace>& traces, const ClusterSpec& cluster, TraceImport how = {});

} // namespace memwall

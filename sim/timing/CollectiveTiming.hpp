#pragma once
// NCCL's measured speed inside one NVSwitch node, from the GPU's fitted profile.
//
// The collective algorithms (collective/) move the textbook bytes over the links at
// line rate: a ring all-reduce of S over n GPUs sends 2(n-1)/n S per port at the NVLink
// bandwidth, with one route latency per step. NCCL reaches less: its bus bandwidth on 8
// A100s is ~215 GB/s of the 300 GB/s line rate, on 8 H100s ~375 of 450, and a call costs
// tens of microseconds before the first byte. Where the profile holds a measured curve
// for the kind and group size inside one node, the collective's flows carry their bytes
// divided by that efficiency (so the links stay busy as long as NCCL keeps them, and
// contention still shares them), and a leading delay adds the fitted latency beyond the
// plan's hop latencies. Alone, the collective then takes the fitted time.
//
// all-gather and reduce-scatter without curves of their own use the all-reduce curve of
// the same group: NCCL's ring reaches the same bus bandwidth for the three (8 x H200:
// 367.6, 361.4, 362.9 GB/s), and, though in half the steps, the same latency: at 1 MiB
// on 8 x H100 an all-reduce takes 41.9 us, an all-gather 40.1 and a reduce-scatter 40.8
// (together-nccl-tests, NCCL 2.26.2), where half the latency would make them 2x faster.
#include "hwmodels/GpuSpec.hpp"
#include "workloads/dag/Op.hpp"

namespace memwall {

struct CollectiveTiming {
  double flow_scale = 1; // multiply every flow's bytes
  double delay_s    = 0; // extra latency, before the first phase
};

// `hop_latency_s`: route latency between two members; `ranks` inside one node.
CollectiveTiming nvlink_collective_timing(const GpuSpec& g, CollectiveKind kind, int ranks, double bytes,
                                          double hop_latency_s);

} // namespace memwall

#pragma once
// How long a kernel takes on a GPU alone, split the way the replay needs it: a fixed
// overhead (launch and tail), a compute time and the bandwidth its HBM bytes stream at.
// The replay runs the compute as an Exec and the bytes as a flow over the HBM link, so
// that concurrent kernels and copies share both.
//
// With a fitted profile (GpuSpec::profile): GEMMs by their shape (GemmModel: tile and
// wave quantisation, the memory side included), memory-bound kernels by the profile's
// elementwise curve (launch + bytes / bandwidth of the size regime). Without one, the
// catalog's estimates: peak x matmul/attention efficiency and hbm_achievable_bw.
#include "hwmodels/GpuSpec.hpp"
#include "workloads/dag/Op.hpp"

#include <algorithm>

namespace memwall {

struct KernelTiming {
  double overhead_s = 0;
  double compute_s  = 0;
  // Of compute_s, the part the clock paces (a fitted GEMM's wave-quantised tile time; the
  // rest of a measured GEMM's time it waits on its operands in HBM); < 0: all of it.
  double clocked_s = -1;
  double clocked() const { return clocked_s < 0 ? compute_s : std::min(clocked_s, compute_s); }
  // At a fraction x of full clock: the clocked part takes 1 / x as long.
  void slow_clock(double x)
  {
    double c = clocked();
    compute_s += c * (1 / x - 1);
    clocked_s = c / x;
  }
  double memory_bw = 0; // bytes/s the op's bytes move at when alone
  // The kernel, not the HBM, sets memory_bw (decode attention's cache reads, below the
  // HBM's rate): beside other streams its bytes take at least that long too.
  bool kernel_paced = false;
  double memory_s(double bytes) const { return memory_bw > 0 ? bytes / memory_bw : 0.0; }
  // Alone on its GPU.
  double total_s(double bytes) const;
};

KernelTiming kernel_timing(const GpuSpec& g, const Op& op);

// A kernel recorded on `from` (Op::seconds) as it would run on `to`: as recorded on the
// same GPU. Else its launch-and-tail part (all of a shorter kernel) scales by the ratio
// of the GPUs' launch times, and the rest by what bounds its class: compute (gemm,
// attention) by the ratio of peak FLOP/s at its dtype times the class's efficiency;
// memory-bound kernels (elementwise, other) move the bytes they moved at the source's
// streaming bandwidth at the target's. Launch time and streaming bandwidth come from a
// GPU's fitted profile (its elementwise curve) where it has one, else from the catalog
// (kernel_overhead_s, hbm_achievable_bw). A format the target lacks runs at its fp16
// (else fp32) rate.
KernelTiming recorded_kernel_timing(const GpuSpec& from, const GpuSpec& to, const Op& op);

} // namespace memwall

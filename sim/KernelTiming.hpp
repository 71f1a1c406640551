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
#include "GpuSpec.hpp"
#include "Op.hpp"

namespace memwall {

struct KernelTiming {
  double overhead_s = 0;
  double compute_s  = 0;
  double memory_bw  = 0; // bytes/s the op's bytes move at when alone
  double memory_s(double bytes) const { return memory_bw > 0 ? bytes / memory_bw : 0.0; }
  // Alone on its GPU.
  double total_s(double bytes) const;
};

KernelTiming kernel_timing(const GpuSpec& g, const Op& op);

} // namespace memwall

#pragma once
// One GPU model: memory, compute and host-link figures from the catalog or a spec.
// All quantities in SI units: bytes, bytes/s, FLOP/s, seconds, USD.
#include "hwmodels/Dtype.hpp"
#include "hwmodels/profile/GpuProfile.hpp"

#include <map>
#include <memory>
#include <string>

namespace memwall {

struct GpuSpec {
  std::string id;   // catalog identifier, e.g. "a100-sxm4-80gb" (public contract)
  std::string name; // marketing name
  std::string vendor;
  double memory_bytes      = 0;       // as the driver reports it (nvidia-smi total, cudaMemGetInfo)
  int sms                  = 0;       // streaming multiprocessors (compute units); 0 = unknown
  double hbm_peak_bw       = 0;       // datasheet
  double hbm_achievable_bw = 0;       // sustained copy bandwidth (measured or estimated)
  std::map<Dtype, double> peak_flops; // dense tensor/vector peak per dtype it supports
  double matmul_efficiency    = 0.7;  // achieved fraction of peak for large GEMMs
  double attention_efficiency = 0.5;  // achieved fraction of peak for attention kernels
  double kernel_overhead_s    = 4e-6; // launch + tail of one kernel
  double context_bytes        = 0;    // CUDA context, cuBLAS/NCCL handles
  int pcie_gen                = 4;
  int pcie_lanes              = 16;
  double h2d_bw               = 0; // achievable pinned host-to-device
  double d2h_bw               = 0; // achievable pinned device-to-host
  double nvlink_bw            = 0; // per direction, all links together; 0 = none
  double price_usd            = 0;
  // Fitted from microbenchmarks (calibration/); null: the efficiencies above are estimates.
  std::shared_ptr<const GpuProfile> profile;

  bool supports(Dtype d) const { return peak_flops.count(d) != 0; }
  double peak(Dtype d) const { return supports(d) ? peak_flops.at(d) : 0.0; }
};

} // namespace memwall

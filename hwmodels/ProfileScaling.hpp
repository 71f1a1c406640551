#pragma once
// A GPU derived from a profiled catalog GPU with another compute peak or memory bandwidth
// (`hardware.gpu: {preset: h100-sxm-80gb, peak_flops: {bf16: ...}}`, or `--set
// hardware.gpu.hbm_peak_bw=...`) is timed as changed: the measured profile is scaled by
// kernel class. A GEMM model runs at the dtype's new peak (its fitted efficiency kept)
// and streams its operands at the new bandwidth; memory-bound kernels stream at the new
// sustained bandwidth (their launch latencies kept); a measured GEMM table corrects the
// scaled model by what it measured against the model it was fitted with. Copies over the
// host link and collectives are not scaled: these keys do not change them.
#include "hwmodels/GpuSpec.hpp"

#include <map>
#include <string>

namespace memwall {

struct ProfileScale {
  std::map<Dtype, double> compute; // new peak / measured peak, per dtype the profile measured
  double memory = 1;               // new sustained HBM bandwidth / measured
  bool any() const { return memory != 1 || !compute.empty(); }
  // "bf16 peak x0.50, HBM x0.50".
  std::string text() const;
};

// How `gpu` differs from `measured`, the catalog GPU its profile `p` was fitted on, in
// what the profile times: the peaks of the dtypes it measured GEMMs of, and
// hbm_achievable_bw.
ProfileScale profile_scale(const GpuProfile& p, const GpuSpec& measured, const GpuSpec& gpu);
// `p` scaled by `s`; its `scaled` says how.
GpuProfile scaled_profile(const GpuProfile& p, const ProfileScale& s);

} // namespace memwall

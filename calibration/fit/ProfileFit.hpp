#pragma once
// Fits a GpuProfile to measurements of one GPU (memwall calibrate fit), and measures a
// profile's error on measurements (memwall calibrate check; to be meaningful, points
// held out of the fit).
#include "calibration/Measurement.hpp"
#include "hwmodels/GpuSpec.hpp"
#include "hwmodels/profile/GpuProfile.hpp"

#include <string>
#include <vector>

namespace memwall {

// The GEMM model of one dtype: minimises the mean squared log error of time over the
// points, by Nelder-Mead from the datasheet's figures. `gpu` gives peak and SMs.
GemmModel fit_gemm(const std::vector<Measurement>& points, const GpuSpec& gpu, Dtype dtype);
// Piecewise latency + bytes / bandwidth over (bytes, time_s), up to `max_regimes`
// contiguous size regimes; a regime is added only where it cuts the error by a fifth
// (and the fit is not already within 0.1 % RMS).
// Each regime's bandwidth is at most `max_bandwidth` (the link's or memory's peak), its
// latency at least 0. `monotonic`: a regime is added only
// where the curve's time keeps growing with size (kernels and copies; NCCL's protocol
// switches make a collective's time fall at a boundary).
LatencyBandwidthCurve fit_curve(const std::vector<Measurement>& points, int max_regimes = 3,
                                double max_bandwidth = 1e18, bool monotonic = false);
// Every model the measurements of `gpu.id` allow: a GEMM model per dtype, and per dtype
// and pass (rows with a pass) a model and a table of the measured times; curves for
// memory-bound kernels, copies and collectives, bounded by the part's peaks. A dtype with
// rows that name their pass is fitted on those alone (its pass-less rows left out). InputError
// when rows name another GPU or nothing can be fitted.
GpuProfile fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, const std::string& source);

struct CheckLine {
  std::string benchmark; // gemm:fp16, gemm:bf16:dgrad, elementwise, all_reduce 8x8, h2d_pinned, ...
  size_t points       = 0;
  double median_error = 0, p90_error = 0, max_error = 0; // |predicted / measured - 1|
  double median_signed = 0;                              // predicted / measured - 1
};
// Errors of the profile's predictions per benchmark (GEMMs per dtype and pass); rows the
// profile has no model for are counted in `skipped`. `gpu` (the catalog entry, may be
// null) gives the datasheet peaks a dtype without a model of its own borrows with;
// `predictions`, when given, receives each row's predicted time (< 0: none). InputError
// when a row names another GPU than the profile.
std::vector<CheckLine> check_profile(const GpuProfile& p, const std::vector<Measurement>& rows, size_t& skipped,
                                     const GpuSpec* gpu = nullptr, std::vector<double>* predictions = nullptr);
// Predicted time of one measurement; < 0 when the profile has no model for it.
double predict(const GpuProfile& p, const Measurement& m, const GpuSpec* gpu = nullptr);

} // namespace memwall

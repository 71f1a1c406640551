#pragma once
// Fits a GpuProfile to measurements of one GPU (memwall calibrate fit), and measures a
// profile's error on measurements (memwall calibrate check; to be meaningful, points
// held out of the fit).
#include "GpuProfile.hpp"
#include "GpuSpec.hpp"
#include "Measurement.hpp"

#include <string>
#include <vector>

namespace memwall {

// The GEMM model of one dtype: minimises the mean squared log error of time over the
// points, by Nelder-Mead from the datasheet's figures. `gpu` gives peak and SMs.
GemmModel fit_gemm(const std::vector<Measurement>& points, const GpuSpec& gpu, Dtype dtype);
// Piecewise latency + bytes / bandwidth over (bytes, time_s), up to `max_regimes`
// contiguous size regimes; a regime is added only where it cuts the error by a fifth
// (and the fit is not already within 0.1 % RMS).
LatencyBandwidthCurve fit_curve(const std::vector<Measurement>& points, int max_regimes = 3);
// Every model the measurements of `gpu.id` allow. InputError when rows name another GPU
// or nothing can be fitted.
GpuProfile fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, const std::string& source);

struct CheckLine {
  std::string benchmark; // gemm:fp16, elementwise, all_reduce 8x8, h2d_pinned, ...
  size_t points = 0;
  double median_error = 0, p90_error = 0, max_error = 0; // |predicted / measured - 1|
  double median_signed = 0;                              // predicted / measured - 1
};
// Errors of the profile's predictions per benchmark; rows the profile has no model for
// are counted in `skipped`. InputError when a row names another GPU than the profile.
std::vector<CheckLine> check_profile(const GpuProfile& p, const std::vector<Measurement>& rows, size_t& skipped);
// Predicted time of one measurement; < 0 when the profile has no model for it.
double predict(const GpuProfile& p, const Measurement& m);

} // namespace memwall

#include "sim/timing/PowerGovernor.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {

double held_rate(double tensor_s, double memory_s, double memory_j, double tensor_w, double limit_w)
{
  if (tensor_s <= 0)
    return 1.0;
  // a P x + E = L (a / x + m), times x: a P x^2 + (E - L m) x - L a = 0, the positive root,
  // in the form that keeps its precision whichever sign b has.
  double a = tensor_s * tensor_w, b = memory_j - limit_w * memory_s, c = -limit_w * tensor_s;
  double root = std::sqrt(b * b - 4 * a * c);
  double x    = b > 0 ? -2 * c / (b + root) : (-b + root) / (2 * a);
  return std::min(1.0, x);
}

PowerGovernor::PowerGovernor(const GpuSpec& g)
    : on_(g.power_limited()), limit_w_(g.power_limit()), tensor_w_(g.tensor_core_w), idle_w_(g.idle_w),
      hbm_w_(g.hbm_stream_w), hbm_peak_(g.hbm_achievable_bw)
{}

double PowerGovernor::note(const Op& op, const KernelTiming& t)
{
  double d = t.total_s(op.bytes);
  if (d <= 0)
    return 1.0;
  // The window starts empty: the replayed step is one of a run's many, its GPU already at
  // the limit (from idle, the clocks held full rate for tens of ms first: a burst the
  // replay of a step does not see).
  Window& w     = windows_[op.device];
  double keep   = std::exp(-d / window_s);
  bool tensor   = op.kclass == KernelClass::gemm || op.kclass == KernelClass::attention;
  w.tensor_s    = w.tensor_s * keep + (tensor ? d : 0);
  w.memory_s    = w.memory_s * keep + (tensor ? 0 : d);
  double draw_w = idle_w_ + (hbm_w_ - idle_w_) * std::min(1.0, hbm_peak_ > 0 ? op.bytes / d / hbm_peak_ : 0.0);
  w.memory_j    = w.memory_j * keep + (tensor ? 0 : d * draw_w);
  if (!tensor)
    return 1.0;
  return held_rate(w.tensor_s, w.memory_s, w.memory_j, tensor_w_, limit_w_);
}

PowerGovernor::Snapshot PowerGovernor::snapshot(const DeviceRef& device) const
{
  auto it = windows_.find(device);
  return it == windows_.end() ? Snapshot{} : Snapshot{true, it->second};
}

void PowerGovernor::restore(const DeviceRef& device, const Snapshot& s)
{
  if (s.held)
    windows_[device] = s.window;
  else
    windows_.erase(device);
}

} // namespace memwall

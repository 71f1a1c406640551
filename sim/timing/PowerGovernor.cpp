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

double PowerGovernor::note(const Op& op, const KernelTiming& t, double start_s, bool held)
{
  double d = t.total_s(held ? op.bytes : 0); // a recorded kernel's bytes moved where it was recorded
  if (d <= 0)
    return 1.0;
  // The window starts empty: the replayed step is one of a run's many, its GPU already at
  // the limit (from idle, the clocks held full rate for tens of ms first: a burst the
  // replay of a step does not see).
  Window& w  = windows_[op.device];
  bool first = w.busy_until == -std::numeric_limits<double>::infinity();
  if (start_s == back_to_back)
    start_s = first ? 0 : w.busy_until;
  // Each interval of `s` seconds ending now enters an exponential average over window_s:
  // what came before is kept by e^(-s / window_s), the interval weighs window_s (1 - that).
  auto add = [&w](double s, bool tensor, double draw_w) {
    double keep = std::exp(-s / window_s), weight = window_s * (1 - keep);
    w.tensor_s = w.tensor_s * keep + (tensor ? weight : 0);
    w.memory_s = w.memory_s * keep + (tensor ? 0 : weight);
    w.memory_j = w.memory_j * keep + (tensor ? 0 : weight * draw_w);
  };
  if (!first && w.running == 0 && start_s > w.busy_until) // idle since the last kernel ended
    add(start_s - w.busy_until, false, idle_w_);
  if (!held) { // ran as recorded: busy, its draw unknown
    w.busy_until = std::max(w.busy_until, start_s + d);
    return 1.0;
  }
  // A tensor-core kernel draws as one for the part of its time the clock paces and as a
  // memory-bound kernel for the rest (its launch, its wait on HBM: a decode GEMM of a few
  // tokens streams its weights at the HBM's rate and barely uses its tensor cores); only
  // that part is slowed.
  bool tensor   = op.kclass == KernelClass::gemm || op.kclass == KernelClass::attention;
  double busy_s = tensor ? std::min(t.clocked(), d) : 0;
  double draw_w = idle_w_ + (hbm_w_ - idle_w_) * std::min(1.0, hbm_peak_ > 0 ? op.bytes / d / hbm_peak_ : 0.0);
  if (d > busy_s)
    add(d - busy_s, false, draw_w);
  double x = 1.0;
  if (busy_s > 0) {
    add(busy_s, true, 0);
    x = held_rate(w.tensor_s, w.memory_s, w.memory_j, tensor_w_, limit_w_);
  }
  KernelTiming ran = t;
  ran.slow_clock(x);
  w.busy_until = std::max(w.busy_until, start_s + ran.total_s(op.bytes));
  return x;
}

void PowerGovernor::started(const DeviceRef& device)
{
  if (on_)
    ++windows_[device].running;
}

void PowerGovernor::ended(const DeviceRef& device, double end_s)
{
  if (!on_)
    return;
  auto it = windows_.find(device);
  if (it == windows_.end() || it->second.running == 0)
    return;
  --it->second.running;
  it->second.busy_until = std::max(it->second.busy_until, end_s);
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

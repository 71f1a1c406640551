#pragma once
// A GPU's power limit as the rate its tensor cores hold (calibration/research/power-limits.md
// section 6, measured on an H200 at 700 W). Board power is the time-average of what each
// kernel draws: tensor-core kernels (GEMMs, attention) draw tensor_core_w at full clock and
// tensor_core_w x^2 at a fraction x of their rate; memory-bound kernels draw idle_w plus
// (hbm_stream_w - idle_w) times their share of the sustained HBM bandwidth. The governor
// holds the average over the GPU's last window of kernel time at power_limit_w (the TDP
// unless a spec lowers it) by slowing the tensor-core kernels: x solves a P x + E = L (a / x + m), a the window's
// tensor-core time at full clock, m its memory-bound time, E their energy, each summed with
// weights that fall by e per window_s. The window is the time the H200's clocks took to
// fall under back-to-back GEMMs (tens of ms; a step of hundreds of ms runs at its own mix).
// The window starts empty (a step of a run in its steady state); idle and waits are not
// credited: the average of a busy phase (conservative where a GPU waits longer than the
// window). A GPU without tensor_core_w (0) runs at full rate.
#include "hwmodels/DeviceRef.hpp"
#include "hwmodels/GpuSpec.hpp"
#include "sim/timing/KernelTiming.hpp"
#include "workloads/dag/Op.hpp"

#include <unordered_map>

namespace memwall {

class PowerGovernor {
public:
  static constexpr double window_s = 0.05;

  explicit PowerGovernor(const GpuSpec& g);
  bool on() const { return on_; }
  // Notes `t` (the kernel at full clock) in `op.device`'s window and returns the fraction
  // of its full rate a tensor-core kernel runs at now (1 for any other kernel).
  double note(const Op& op, const KernelTiming& t);

  // What a device's window holds, its weights already applied.
  struct Window {
    double tensor_s = 0, memory_s = 0, memory_j = 0;
  };
  // A device's window, to be put back where a kernel noted was not run after all (a
  // coalesced run that did not form: its head is launched, and noted, on its own).
  struct Snapshot {
    bool held = false;
    Window window;
  };
  Snapshot snapshot(const DeviceRef& device) const;
  void restore(const DeviceRef& device, const Snapshot& s);

private:
  std::unordered_map<DeviceRef, Window, DeviceRefHash> windows_;
  bool on_;
  double limit_w_, tensor_w_, idle_w_, hbm_w_, hbm_peak_;
};

// The fraction x of full rate at which tensor-core work of `tensor_s` seconds (at full
// clock) and memory-bound work of `memory_s` seconds drawing `memory_j` joules average
// `limit_w` watts, tensor cores drawing `tensor_w` at full clock: 1 when they already do.
double held_rate(double tensor_s, double memory_s, double memory_j, double tensor_w, double limit_w);

} // namespace memwall

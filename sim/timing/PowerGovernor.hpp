#pragma once
// A GPU's power limit as the rate its tensor cores hold (calibration/research/power-limits.md
// section 6, measured on an H200 at 700 W). Board power is the time-average of what the GPU
// draws: tensor-core kernels (GEMMs in bf16 and FP8, attention) draw tensor_core_w at full
// clock and tensor_core_w x^2 at a fraction x of their rate; memory-bound kernels draw
// idle_w plus (hbm_stream_w - idle_w) times their share of the sustained HBM bandwidth; the
// GPU idle between kernels (a pipeline bubble, a wait for a collective) draws idle_w. The
// governor holds the average over the GPU's last window at power_limit_w (the TDP unless a
// spec lowers it) by slowing the tensor-core kernels: x solves a P x + E = L (a / x + m), a
// the window's tensor-core time at full clock, m its other time, E that time's energy, each
// interval weighted as an exponential average of time constant window_s weights it. The
// window is how fast the H200's clocks fell under GEMMs and came back over idle: after 25 to
// 300 ms idle its GEMMs ran at full clock for ~30 ms and fell to the held rate over the next
// ~50 (power-bursts.csv; 40 ms fits its bursts best).
// The window starts empty (a step of a run in its steady state). A GPU without
// tensor_core_w (0) runs at full rate.
#include "hwmodels/DeviceRef.hpp"
#include "hwmodels/GpuSpec.hpp"
#include "sim/timing/KernelTiming.hpp"
#include "workloads/dag/Op.hpp"

#include <limits>
#include <unordered_map>

namespace memwall {

class PowerGovernor {
public:
  static constexpr double window_s = 0.04; // fitted on power-bursts.csv (research/power-limits.md 7)

  explicit PowerGovernor(const GpuSpec& g);
  bool on() const { return on_; }
  // `start_s` of a kernel that follows its device's last one with no gap.
  static constexpr double back_to_back = -1;

  // Notes `t` (the kernel at full clock), started at `start_s` (the simulated time), in
  // `op.device`'s window, the device's idle time since its last kernel ended first, and
  // returns the fraction of its full rate a tensor-core kernel runs at now (1 for any other
  // kernel). A kernel that ran as recorded (`held` false: its draw unknown) only keeps the
  // time it ran from being taken for idle.
  double note(const Op& op, const KernelTiming& t, double start_s, bool held = true);
  // A kernel just noted runs as SimGrid activities whose end is known only when they end
  // (sharing its HBM, waiting on paging: later than noted): its device is not idle until
  // `ended`, whatever other kernels start meanwhile. Both do nothing where the model is off.
  void started(const DeviceRef& device);
  void ended(const DeviceRef& device, double end_s);

  // What a device's window holds, its weights already applied, and when its last kernel
  // ends (no kernel yet: -infinity).
  struct Window {
    double tensor_s = 0, memory_s = 0, memory_j = 0;
    double busy_until = -std::numeric_limits<double>::infinity();
    int running       = 0; // started and not yet ended
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

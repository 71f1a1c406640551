#include "sim/timing/KernelTimer.hpp"

#include <functional>

namespace memwall {

size_t KernelTimer::KeyHash::operator()(const Key& k) const
{
  size_t h = std::hash<double>()(k.flops);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<double>()(k.bytes));
  mix(std::hash<double>()(k.seconds));
  mix(k.shape.m);
  mix(k.shape.n);
  mix(k.shape.k | static_cast<size_t>(k.shape.groups()) << 32);
  mix(static_cast<size_t>(k.host_paced) << 32 | static_cast<size_t>(k.pass) << 24 |
      static_cast<size_t>(k.family) << 16 | static_cast<size_t>(k.kclass) << 8 | static_cast<size_t>(k.dtype));
  return h;
}

KernelTiming KernelTimer::held(const Op& op, KernelTiming t, double start_s)
{
  if (power_.on()) {
    double x = power_.note(op, t, start_s, op.seconds <= 0); // a recorded kernel ran as recorded
    if (x < 1)
      t.slow_clock(x);
  }
  return t;
}

KernelTiming KernelTimer::full_clock(const Op& op)
{
  Key key{op.flops, op.bytes, op.seconds, op.shape, op.kclass, op.family, op.dtype, op.pass, op.host_paced};
  auto it = known_.find(key);
  if (it != known_.end())
    return it->second;
  // A serving run's kernels change shape with every batch: forget them all now and
  // then, so that the table stays small (and fast) however long the run.
  if (known_.size() >= max_known)
    known_.clear();
  KernelTiming t =
      op.seconds > 0 && recorded_on_ ? recorded_kernel_timing(*recorded_on_, gpu_, op) : kernel_timing(gpu_, op);
  return known_.emplace(key, t).first->second;
}

} // namespace memwall

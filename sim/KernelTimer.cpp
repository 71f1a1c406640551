#include "KernelTimer.hpp"

#include <functional>

namespace memwall {

size_t KernelTimer::KeyHash::operator()(const Key& k) const
{
  size_t h = std::hash<double>()(k.flops);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<double>()(k.bytes));
  mix(k.shape.m);
  mix(k.shape.n);
  mix(k.shape.k);
  mix(static_cast<size_t>(k.kclass) << 8 | static_cast<size_t>(k.dtype));
  return h;
}

const KernelTiming& KernelTimer::operator()(const Op& op)
{
  Key key{op.flops, op.bytes, op.shape, op.kclass, op.dtype};
  auto it = known_.find(key);
  if (it == known_.end())
    it = known_.emplace(key, kernel_timing(gpu_, op)).first;
  return it->second;
}

} // namespace memwall

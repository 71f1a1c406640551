#pragma once
// The copies and host work a pass over a batch has already seen, by what decides the
// routes they cross (ActivityLauncher::for_each_route) and the stream that crosses them. A pass
// that only claims or watches routes (coalescing's owners, flow folding's watched links)
// learns nothing from a second op alike: Megatron 1T's 65,536 pipeline sends are 126
// distinct ones, each with 47 shadow ranks' routes.
#include "hwmodels/DeviceRef.hpp"
#include "workloads/dag/Op.hpp"

#include <unordered_set>

namespace memwall {

class RouteOpSet {
public:
  // False when an op with the same routes and stream was seen before; ops of other
  // kinds are always new (their routes are found per op, or not at all).
  bool first(const Op& op)
  {
    if (op.kind != OpKind::copy && op.kind != OpKind::host_compute)
      return true;
    return seen_.insert(Key{op.kind, op.stream, op.pageable, op.seconds > 0, op.device, op.src, op.dst}).second;
  }

private:
  struct Key {
    OpKind kind;
    StreamKind stream;
    bool pageable, recorded;
    DeviceRef device, src, dst;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const
    {
      DeviceRefHash h;
      size_t x = h(k.device) * 0x9E3779B97F4A7C15ULL ^ h(k.src) * 0xC2B2AE3D27D4EB4FULL ^ h(k.dst);
      return x ^ (static_cast<size_t>(k.kind) << 3 | static_cast<size_t>(k.stream) << 8 |
                  static_cast<size_t>(k.pageable) << 1 | static_cast<size_t>(k.recorded));
    }
  };
  std::unordered_set<Key, KeyHash> seen_;
};

} // namespace memwall

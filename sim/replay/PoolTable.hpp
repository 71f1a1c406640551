#pragma once
// Every device's memory pool in the replay, made at its first alloc or free and found
// fast: consecutive ops share one, and 64 pipeline stages take turns (PoolTable.cpp).
#include "hwmodels/ClusterSpec.hpp"
#include "hwmodels/DeviceRef.hpp"
#include "sim/allocator/DeviceAllocator.hpp"
#include "sim/replay/MemoryPool.hpp"
#include "workloads/dag/OpDag.hpp"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

namespace memwall {

class PoolTable {
public:
  // `allocator`: what serves each GPU's tensors (sim/allocator; none: the pools count
  // tensor bytes as they are); `timelines`: keep each pool's events.
  PoolTable(const ClusterSpec& cluster, const OpDag& dag, bool timelines, AllocatorChoice allocator)
      : cluster_(cluster), dag_(dag), timelines_(timelines), allocator_(std::move(allocator))
  {}

  // The pool of `d`, made at its first use.
  MemoryPool& pool(const DeviceRef& d)
  {
    if (last_.second && last_.first == d)
      return *last_.second;
    auto it = index_.find(d);
    if (it == index_.end())
      return make(d);
    last_ = {d, it->second};
    return *it->second;
  }
  // In device order.
  const std::map<DeviceRef, std::unique_ptr<MemoryPool>>& by_device() const { return by_device_; }

private:
  MemoryPool& make(const DeviceRef& d);

  const ClusterSpec& cluster_;
  const OpDag& dag_;
  bool timelines_;
  AllocatorChoice allocator_;
  std::map<DeviceRef, std::unique_ptr<MemoryPool>> by_device_;
  std::pair<DeviceRef, MemoryPool*> last_{{DeviceKind::gpu, -1, -1}, nullptr};
  std::unordered_map<DeviceRef, MemoryPool*, DeviceRefHash> index_;
};

} // namespace memwall

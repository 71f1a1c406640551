#pragma once
// Every device's memory pool in the replay, found fast: consecutive ops share one, and
// 64 pipeline stages take turns (ReplayerPools.cpp).
#include "hwmodels/DeviceRef.hpp"
#include "sim/replay/MemoryPool.hpp"

#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

namespace memwall {

struct PoolTable {
  // The pool of `d`, null until one is kept.
  MemoryPool* find(const DeviceRef& d)
  {
    if (last.second && last.first == d)
      return last.second;
    auto it = index.find(d);
    if (it == index.end())
      return nullptr;
    last = {d, it->second};
    return it->second;
  }
  MemoryPool& keep(const DeviceRef& d, std::unique_ptr<MemoryPool> p)
  {
    MemoryPool& made = *by_device.emplace(d, std::move(p)).first->second;
    index[d]         = &made;
    last             = {d, &made};
    return made;
  }

  std::map<DeviceRef, std::unique_ptr<MemoryPool>> by_device;
  std::pair<DeviceRef, MemoryPool*> last{{DeviceKind::gpu, -1, -1}, nullptr};
  std::unordered_map<DeviceRef, MemoryPool*, DeviceRefHash> index;
};

} // namespace memwall

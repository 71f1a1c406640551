#pragma once
// Which 2 MB chunk of managed memory leaves the GPU when a migration needs room
// (UnifiedMemoryConfig::eviction). Implementations live in impl/ and register by name;
// `memwall list eviction-policies` prints them.
#include "base/Registry.hpp"

#include <functional>
#include <memory>

namespace memwall {

class EvictionPolicy {
public:
  virtual ~EvictionPolicy() = default;
  // `chunk` became resident on the GPU.
  virtual void resident(int chunk) = 0;
  // A kernel used `chunk` while it was resident.
  virtual void touched(int chunk) = 0;
  // `chunk` left the GPU (evicted) or its tensor was freed.
  virtual void gone(int chunk) = 0;
  // The chunk to evict next; -1 when no chunk is resident.
  virtual int victim() const = 0;
};

using EvictionFactory = std::function<std::unique_ptr<EvictionPolicy>()>;
Registry<EvictionFactory>& eviction_registry();

} // namespace memwall

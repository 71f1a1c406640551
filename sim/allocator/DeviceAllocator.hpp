#pragma once
// What a GPU process's memory allocator holds from the device for the tensors it serves.
// A framework does not cudaMalloc each tensor: PyTorch's caching allocator carves
// tensors out of segments it keeps after the tensors die, so the device holds more than
// the live tensors (reserved against allocated), and a real out-of-memory comes when a
// new segment does not fit beside the reserved ones and the CUDA context. MemoryPool asks
// its allocator for every tensor of a replay; the training stack picks the allocator
// (`training.allocator`, `memwall list allocators`), implementations live in impl/.
#include "base/Registry.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace memwall {

class DeviceAllocator {
public:
  virtual ~DeviceAllocator() = default;
  // Bytes a request for `bytes` would take from the device now: 0 when a cached block
  // serves it, else the new segment's size.
  virtual double needs(double bytes) const = 0;
  // Serves `bytes` for tensor `tensor` (ids may repeat while live: a repeated chain of
  // ops allocates under the same id; frees then return the oldest first).
  virtual void alloc(uint32_t tensor, double bytes) = 0;
  virtual void free(uint32_t tensor, double bytes)  = 0;
  // What a failed cudaMalloc makes it do before trying again: give cached segments back.
  virtual void release_cached() = 0;
  // Bytes held from the device (segments) and served to live tensors.
  virtual double reserved() const  = 0;
  virtual double allocated() const = 0;
};

using AllocatorFactory = std::function<std::unique_ptr<DeviceAllocator>()>;
Registry<AllocatorFactory>& allocator_registry();

// An allocator picked by name, resolved once: what makes one for each GPU's pool.
struct AllocatorChoice {
  std::string name; // "": none, the pools count tensor bytes as they are
  AllocatorFactory make;
  static AllocatorChoice named(const std::string& name)
  {
    return name.empty() ? AllocatorChoice{} : AllocatorChoice{name, allocator_registry().get(name)};
  }
};

} // namespace memwall

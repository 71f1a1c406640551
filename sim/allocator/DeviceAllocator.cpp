#include "sim/allocator/DeviceAllocator.hpp"

namespace memwall {

Registry<AllocatorFactory>& allocator_registry()
{
  static Registry<AllocatorFactory> registry("allocator", "training.allocator", "allocators");
  return registry;
}

} // namespace memwall

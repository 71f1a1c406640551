// `exact`: every tensor takes its own bytes from the device and gives them back when it
// dies; reserved equals allocated. What the Megatron validation compares (Korthikanti et
// al. count tensor bytes), and the least any allocator could hold.
#include "sim/allocator/DeviceAllocator.hpp"

namespace memwall {
namespace {

class ExactAllocator : public DeviceAllocator {
public:
  double needs(double bytes) const override { return bytes; }
  void alloc(uint32_t, double bytes) override { held_ += bytes; }
  void free(uint32_t, double bytes) override { held_ -= bytes; }
  void release_cached() override {}
  double reserved() const override { return held_; }
  double allocated() const override { return held_; }

private:
  double held_ = 0;
};

const bool registered = allocator_registry().add(
    "exact", "each tensor's bytes taken and given back as it lives and dies: reserved equals allocated",
    [] { return std::make_unique<ExactAllocator>(); });

} // namespace
} // namespace memwall

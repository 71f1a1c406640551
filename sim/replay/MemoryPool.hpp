#pragma once
// Occupancy of one memory (a GPU's HBM, a socket's DRAM, a node's NVMe) over a replay.
// Peaks are never computed by formula: they are whatever the sequence of allocs and
// frees reaches. An alloc that does not fit is recorded as an OOM and still counted, so
// the user sees the whole demand.
//
// A GPU's pool may serve its tensors through a framework's allocator (allocator/): then
// what the device holds is the allocator's reserved segments plus what bypasses it (the
// CUDA context, managed memory brought in by the driver), an alloc is out of memory when
// a new segment does not fit even after the allocator gave its cached ones back, and
// the result reports the reserved peak beside the allocated one.
#include "sim/allocator/DeviceAllocator.hpp"
#include "sim/result/RunResult.hpp"

#include <memory>

namespace memwall {

class MemoryPool {
public:
  // `timeline`: keep an event per alloc and free (PoolResult::timeline), not only peaks.
  MemoryPool(DeviceRef device, std::string hardware, double capacity, int count, bool timeline = true);
  // Serves tensors through `allocator` (`name` for the results) from now on.
  void use_allocator(const std::string& name, std::unique_ptr<DeviceAllocator> allocator);

  // `tensor`: the DAG's tensor id (0: not a tensor the framework allocates).
  void alloc(MemCategory c, double bytes, double now, const OpName& op, uint32_t tensor = 0);
  void free(MemCategory c, double bytes, double now, uint32_t tensor = 0);
  double free_bytes() const { return result_.capacity - total_; }
  // What the device has left: beside its allocator's segments where it has one.
  double room() const { return result_.capacity - (allocator_ ? held() : total_); }
  // Bytes an alloc of `bytes` would take from the device now (a new segment, or none).
  double needs(MemCategory c, double bytes, uint32_t tensor) const
  {
    return through_allocator(c, tensor) ? allocator_->needs(bytes) : bytes;
  }
  double used_bytes() const { return total_; }
  PoolResult take_result() { return std::move(result_); }

private:
  void record(MemCategory c, double now);
  void record_oom(const OpName& op, double now, double bytes, double free);
  // What the device holds with an allocator: its segments and what bypasses it.
  double held() const { return allocator_->reserved() + bypass_; }
  bool through_allocator(MemCategory c, uint32_t tensor) const
  {
    return allocator_ && tensor != 0 && c != MemCategory::context;
  }
  static constexpr size_t max_recorded_ooms = 32;

  PoolResult result_;
  CategoryBytes used_{};
  double total_  = 0;
  bool timeline_ = true;
  std::unique_ptr<DeviceAllocator> allocator_;
  double bypass_ = 0; // bytes held outside the allocator
};

} // namespace memwall

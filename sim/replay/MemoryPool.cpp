#include "sim/replay/MemoryPool.hpp"

#include <cmath>

namespace memwall {

MemoryPool::MemoryPool(DeviceRef device, std::string hardware, double capacity, int count, bool timeline)
    : timeline_(timeline)
{
  result_.device   = device;
  result_.name     = device.name();
  result_.hardware = std::move(hardware);
  result_.capacity = capacity;
  result_.count    = count;
}

void MemoryPool::use_allocator(const std::string& name, std::unique_ptr<DeviceAllocator> allocator)
{
  allocator_        = std::move(allocator);
  result_.allocator = name;
}

void MemoryPool::record_oom(const OpName& op, double now, double bytes, double free)
{
  if (result_.ooms.size() < max_recorded_ooms)
    result_.ooms.push_back({op.str(), now, bytes, std::max(0.0, free)});
  ++result_.oom_count;
}

void MemoryPool::alloc(MemCategory c, double bytes, double now, const OpName& op, uint32_t tensor)
{
  if (!allocator_) {
    if (total_ + bytes > result_.capacity)
      record_oom(op, now, bytes, result_.capacity - total_);
  } else {
    // What the device must give: a new segment (none when a cached block serves the
    // tensor), or the bytes themselves for what bypasses the allocator. When that does not
    // fit, the allocator gives its cached segments back and tries again (cudaMalloc's retry).
    bool served = through_allocator(c, tensor);
    double need = served ? allocator_->needs(bytes) : bytes;
    if (need > 0 && held() + need > result_.capacity) {
      allocator_->release_cached();
      if (held() + need > result_.capacity)
        record_oom(op, now, bytes, result_.capacity - held());
    }
    if (served)
      allocator_->alloc(tensor, bytes);
    else
      bypass_ += bytes;
  }
  used_[static_cast<size_t>(c)] += bytes;
  total_ += bytes;
  record(c, now);
}

void MemoryPool::free(MemCategory c, double bytes, double now, uint32_t tensor)
{
  if (through_allocator(c, tensor))
    allocator_->free(tensor, bytes);
  else if (allocator_)
    bypass_ -= bytes;
  auto& u = used_[static_cast<size_t>(c)];
  u -= bytes;
  total_ -= bytes;
  // Sums of doubles drift by an ulp or two; an empty category reads as zero.
  if (std::fabs(u) < 1e-6)
    u = 0;
  if (std::fabs(total_) < 1e-6)
    total_ = 0;
  record(c, now);
}

void MemoryPool::record(MemCategory c, double now)
{
  size_t i = static_cast<size_t>(c);
  if (timeline_)
    result_.timeline.push_back({now, c, used_[i], total_});
  if (used_[i] > result_.max_by_category[i])
    result_.max_by_category[i] = used_[i];
  if (allocator_ && held() > result_.peak_reserved_bytes)
    result_.peak_reserved_bytes = held();
  if (total_ > result_.peak_bytes) {
    result_.peak_bytes       = total_;
    result_.peak_time        = now;
    result_.peak_by_category = used_;
  }
}

} // namespace memwall

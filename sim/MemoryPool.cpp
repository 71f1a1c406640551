#include "MemoryPool.hpp"

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

void MemoryPool::alloc(MemCategory c, double bytes, double now, const OpName& op)
{
  if (total_ + bytes > result_.capacity) {
    if (result_.ooms.size() < max_recorded_ooms)
      result_.ooms.push_back({op.str(), now, bytes, std::max(0.0, result_.capacity - total_)});
    ++result_.oom_count;
  }
  used_[static_cast<size_t>(c)] += bytes;
  total_ += bytes;
  record(c, now);
}

void MemoryPool::free(MemCategory c, double bytes, double now)
{
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
  if (total_ > result_.peak_bytes) {
    result_.peak_bytes       = total_;
    result_.peak_time        = now;
    result_.peak_by_category = used_;
  }
}

} // namespace memwall

#include "sim/result/StepIntervals.hpp"

#include <algorithm>

namespace memwall {

void IntervalUnion::add(double start, double end)
{
  if (merged_.empty() || start > merged_.back().second) {
    if (merged_.empty() || start >= merged_.back().first) {
      merged_.emplace_back(start, end);
      return;
    }
  } else if (start >= merged_.back().first) {
    merged_.back().second = std::max(merged_.back().second, end);
    return;
  }
  // Out of order: the intervals touching [start, end] are those ending at or after
  // `start` and beginning at or before `end` (ends rise with starts once merged).
  auto first = std::lower_bound(merged_.begin(), merged_.end(), start,
                                [](const Interval& iv, double s) { return iv.second < s; });
  auto last  = std::upper_bound(first, merged_.end(), end, [](double e, const Interval& iv) { return e < iv.first; });
  if (first == last) {
    merged_.insert(first, {start, end});
    return;
  }
  Interval joined{std::min(start, first->first), std::max(end, (last - 1)->second)};
  *first = joined;
  merged_.erase(first + 1, last);
}

double IntervalUnion::length() const
{
  double t = 0;
  for (const auto& [a, b] : merged_)
    t += b - a;
  return t;
}

bool StepIntervals::reads(OpKind kind, const DeviceRef& device) const
{
  // The host's share of offloaded work (ZeRO-Offload's optimizer step on the CPU)
  // keeps the GPU waiting as much as the copies do.
  if (kind == OpKind::host_compute && device.kind == DeviceKind::host && device.node == gpu.node)
    return true;
  return device == gpu;
}

void StepIntervals::add(OpKind kind, StreamKind stream, const DeviceRef& device, double start, double end,
                        double paging_s)
{
  if (end <= start || !reads(kind, device))
    return;
  if (kind == OpKind::host_compute && device.kind == DeviceKind::host) {
    copies.add(start, end);
    return;
  }
  if (kind == OpKind::host_compute) { // issued on the GPU's host stream: its process's own work
    host.add(start, end);
    return;
  }
  if (kind == OpKind::alloc) // waits only for unified memory's evictions
    paging.add(start, end);
  else if (kind == OpKind::kernel) {
    // A kernel under unified memory first waits for its faults and migrations.
    if (paging_s > 0)
      paging.add(start, start + paging_s);
    compute.add(start + std::min(paging_s, end - start), end);
  } else if (kind == OpKind::collective || (kind == OpKind::copy && stream == StreamKind::p2p))
    comm.add(start, end);
  else if (kind == OpKind::copy)
    copies.add(start, end);
}

} // namespace memwall

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

const char* stall_source_name(StallSource s)
{
  static const char* names[] = {"cpu_optimizer_step",  "h2d_pageable_copies", "h2d_pinned_copies",
                                "d2h_pageable_copies", "d2h_pinned_copies",   "other_copies"};
  return names[static_cast<size_t>(s)];
}

void StepIntervals::add(OpKind kind, StreamKind stream, const DeviceRef& device, double start, double end,
                        double paging_s, StepPhase phase, bool pageable)
{
  if (end <= start || !reads(kind, device))
    return;
  if (kind == OpKind::host_compute && device.kind == DeviceKind::host) {
    copies.add(start, end);
    copy_part(StallSource::cpu_step, phase).add(start, end);
    return;
  }
  if (kind == OpKind::host_compute) { // issued on the GPU's host stream: its process's own work
    host.add(start, end);
    return;
  }
  auto& paged = paging_parts[static_cast<size_t>(phase)];
  if (kind == OpKind::alloc) { // waits only for unified memory's evictions
    paging.add(start, end);
    paged.add(start, end);
  } else if (kind == OpKind::kernel) {
    // A kernel under unified memory first waits for its faults and migrations.
    if (paging_s > 0) {
      paging.add(start, start + paging_s);
      paged.add(start, start + paging_s);
    }
    compute.add(start + std::min(paging_s, end - start), end);
  } else if (kind == OpKind::collective ||
             (kind == OpKind::copy && (stream == StreamKind::p2p || stream == StreamKind::tp_comm)))
    comm.add(start, end);
  else if (kind == OpKind::copy) {
    copies.add(start, end);
    StallSource source = stream == StreamKind::h2d   ? (pageable ? StallSource::h2d_pageable : StallSource::h2d_pinned)
                         : stream == StreamKind::d2h ? (pageable ? StallSource::d2h_pageable : StallSource::d2h_pinned)
                                                     : StallSource::other_copies;
    copy_part(source, phase).add(start, end);
  }
}

} // namespace memwall

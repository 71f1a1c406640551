#pragma once
// When the GPU a step's breakdown describes (StepReport: the first GPU holding memory)
// computed, communicated, copied or paged, as unions of time intervals.
//
// The replay fills them op by op as each op ends when no record per op is kept (a
// `--json` run, a sweep point, a serving run of 100,000 requests): the union of a
// stream's back-to-back ops is a handful of intervals, not one per op. StepReport fills
// them from the records otherwise. Either way one rule classifies an op (`add`), and a
// union is the same set of closed intervals whatever order its parts arrive in, so
// the breakdown is the same to the bit.
#include "hwmodels/DeviceRef.hpp"
#include "workloads/dag/Op.hpp"

#include <array>
#include <utility>
#include <vector>

namespace memwall {

// A union of closed intervals, kept merged and sorted: intervals that overlap or touch
// are one. Adding in time order costs O(1); out of order, a binary search.
class IntervalUnion {
public:
  using Interval = std::pair<double, double>;
  void add(double start, double end);
  const std::vector<Interval>& intervals() const { return merged_; }
  bool empty() const { return merged_.empty(); }
  double length() const;

private:
  std::vector<Interval> merged_;
};

// What an offload stall waits for: the host's optimizer step, or copies in each
// direction, pageable ones (staged through the driver's pinned buffer) apart; other
// copies (a recorded trace's memcpys on its compute stream).
enum class StallSource : uint8_t { cpu_step, h2d_pageable, h2d_pinned, d2h_pageable, d2h_pinned, other_copies };
inline constexpr size_t stall_source_count = 6;
inline constexpr size_t step_phase_count   = 5; // StepPhase's values
const char* stall_source_name(StallSource s);

struct StepIntervals {
  bool present = false; // filled by the replay; else read the records
  DeviceRef gpu;
  IntervalUnion compute{}, comm{}, copies{}, paging{};
  IntervalUnion host{}; // the rank's own host work the GPU waits on (a framework's Python and launches)
  // The parts of `copies` by source and phase, and of `paging` by phase: what a stall
  // is made of (StepReport splits each stall by them).
  std::array<IntervalUnion, stall_source_count * step_phase_count> copy_parts{};
  std::array<IntervalUnion, step_phase_count> paging_parts{};

  // An op of [start, end] that waited `paging_s` on unified memory first: where its
  // time counts, if it counts on `gpu` at all.
  void add(OpKind kind, StreamKind stream, const DeviceRef& device, double start, double end, double paging_s,
           StepPhase phase = StepPhase::setup, bool pageable = false);
  IntervalUnion& copy_part(StallSource s, StepPhase p)
  {
    return copy_parts[static_cast<size_t>(s) * step_phase_count + static_cast<size_t>(p)];
  }
  const IntervalUnion& copy_part(StallSource s, StepPhase p) const
  {
    return copy_parts[static_cast<size_t>(s) * step_phase_count + static_cast<size_t>(p)];
  }
  // Whether `add` can use an op on `device` of this kind at all.
  bool reads(OpKind kind, const DeviceRef& device) const;
};

} // namespace memwall

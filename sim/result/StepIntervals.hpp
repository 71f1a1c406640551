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

struct StepIntervals {
  bool present = false; // filled by the replay; else read the records
  DeviceRef gpu;
  IntervalUnion compute{}, comm{}, copies{}, paging{};
  IntervalUnion host{}; // the rank's own host work the GPU waits on (a framework's Python and launches)

  // An op of [start, end] that waited `paging_s` on unified memory first: where its
  // time counts, if it counts on `gpu` at all.
  void add(OpKind kind, StreamKind stream, const DeviceRef& device, double start, double end, double paging_s);
  // Whether `add` can use an op on `device` of this kind at all.
  bool reads(OpKind kind, const DeviceRef& device) const;
};

} // namespace memwall

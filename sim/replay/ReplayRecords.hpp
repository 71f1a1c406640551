#pragma once
// What the replay records of each op (ReplayRecords.cpp): a record per op, by op id;
// none when only the summary is wanted: then the ops whose time the breakdown reads add
// their intervals as they end.
#include "sim/replay/ChainState.hpp"
#include "sim/replay/OpIndex.hpp"
#include "sim/result/RunResult.hpp"
#include "sim/result/StepIntervals.hpp"
#include "workloads/dag/OpDag.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace memwall {

class ReplayRecords {
public:
  // `summary_only`: keep only the intervals StepReport's breakdown reads (StepIntervals);
  // `paging`: unified memory, where an allocation that evicts takes time.
  ReplayRecords(const OpDag& dag, const OpIndex& index, ChainState& chains, bool summary_only, bool paging)
      : dag_(dag), index_(index), chains_(chains), summary_only_(summary_only), paging_(paging)
  {}

  bool summary_only() const { return summary_only_; }
  // Which records ops [from, to) get (ReplayRecords.cpp).
  void keep(size_t from, size_t to);
  // Ops taken before the DAG's first op are forgotten (a serving source's earlier iterations).
  void forget() { summary_op_.clear(); }
  // Whether op `id` keeps a record or an interval.
  bool recorded(OpId id) const { return !summary_only_ || summary_op_[id - index_.base]; }
  OpRecord* record(OpId id) { return summary_only_ ? nullptr : &ops_[id]; }
  // An op's record from its start to its end, or its interval in summary mode.
  void open(OpId id, const Op& op, double now);
  void close(OpId id, const Op& op, double end);
  void span(OpId id, const Op& op, double start, double end);

  std::vector<OpRecord> take_ops() { return std::move(ops_); }
  StepIntervals take_intervals() { return std::move(intervals_); }

private:
  const OpDag& dag_;
  const OpIndex& index_;
  ChainState& chains_;
  bool summary_only_, paging_;
  std::vector<OpRecord> ops_;
  std::vector<uint8_t> summary_op_; // per op - base: its interval is read
  std::unordered_map<OpId, double> summary_start_;
  StepIntervals intervals_{.gpu = {DeviceKind::host, -1, -1}}; // no GPU yet
};

} // namespace memwall

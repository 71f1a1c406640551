#pragma once
// What the replay records of each op (Replayer.cpp): a record per op, by op id; none
// when only the summary is wanted: then the ops whose time the breakdown reads
// (summary_op, per op - base) add their intervals to `intervals` as they end, the
// started ones waiting in `summary_start`.
#include "sim/result/RunResult.hpp"
#include "sim/result/StepIntervals.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace memwall {

struct ReplayRecords {
  std::vector<OpRecord> ops;
  std::vector<uint8_t> summary_op;
  std::unordered_map<OpId, double> summary_start;
  StepIntervals intervals{.gpu = {DeviceKind::host, -1, -1}}; // no GPU yet
};

} // namespace memwall

#pragma once
// One point of a sweep as a row of the results table: its scalar metrics (the --json
// summary flattened: "breakdown_s.compute", "ttft_s.p50", the worst GPU's peak by
// category as "gpu.peak.activations", ...), derived metrics, or its error; optionally
// its memory timelines and link statistics.
#include "app/sweep/SweepSpec.hpp"
#include "sim/result/RunResult.hpp"

#include <string>
#include <utility>
#include <vector>

namespace memwall {

struct SweepRow {
  int64_t index = 0;
  std::string error; // empty when the point ran
  std::vector<std::pair<std::string, double>> numbers;
  std::vector<std::pair<std::string, std::string>> texts;
  std::vector<PoolResult> pools; // when the sweep records memory
  std::vector<LinkResult> links; // when the sweep records links
};

// In the point's process: the row of a finished run, as the payload sent back.
std::string summarize_point(const SweepSpec& sweep, const SweepPoint& point, const ExperimentSpec& spec,
                            const RunResult& r);
SweepRow row_from_payload(int64_t index, const std::string& payload);

// How a result column is stored: whole numbers as int64 (counts, GPUs), flags as
// booleans (fits), the rest as doubles; derived metrics are doubles.
enum class ColumnKind { real, whole, flag };
ColumnKind result_column_kind(const std::string& name);

// Before anything runs: every metric has a usable name (a word, not already a column:
// a result, an axis, the file's index/status/error, or an earlier metric) and reads
// only names a point will have. Throws InputError naming the metric.
void check_sweep_metrics(const SweepSpec& sweep);

} // namespace memwall

#pragma once
// Runs the points of a sweep, each in its own forked process (one SimGrid Engine per
// process, DESIGN.md §3), up to `jobs` at once. A point whose spec is invalid (tp not
// dividing the heads) or whose replay fails is an outcome with its error, not the end
// of the sweep.
#include "app/sweep/SweepSpec.hpp"
#include "sim/result/RunResult.hpp"

#include <functional>
#include <string>
#include <vector>

namespace memwall {

struct PointOutcome {
  int64_t index = 0;
  bool ok       = false;
  std::string data; // summarize()'s payload, or the error message
};

// Runs in the point's process after its replay: what to send back (e.g. metrics).
using PointSummary =
    std::function<std::string(const SweepSpec&, const SweepPoint&, const ExperimentSpec&, const RunResult&)>;

// Runs `todo` (point indices) and calls `done` in this process as each one finishes.
void run_points(const SweepSpec& sweep, const std::vector<int64_t>& todo, int jobs, const PointSummary& summarize,
                const std::function<void(const PointOutcome&)>& done);

// The whole of one point in the calling process (a worker's child): spec, replay, summary.
std::string run_point(const SweepSpec& sweep, const SweepPoint& point, const PointSummary& summarize);

} // namespace memwall

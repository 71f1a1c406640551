#pragma once
// What `memwall optimize` prints: how many layouts it enumerated, refused, pruned and
// replayed; the best K by the objective with each one's time breakdown; why the best
// wins against the spec's own layout and the runner-up (the parts of the step that
// differ most); the Pareto front of step time against dollars per step; and the
// `memwall run` line that reproduces each.
#include "app/optimize/LayoutSearch.hpp"
#include "app/sweep/SweepFile.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace memwall {

// The objectives: the results column each minimises or maximises.
struct Objective {
  std::string name;   // time | cost | energy | tokens_per_dollar
  std::string column; // step_time_s | usd_per_step | energy.joules_per_step | tokens_per_usd
  bool maximise = false;
};
// InputError naming --objective and what is allowed for an unknown name.
Objective objective_named(const std::string& name);

// The rows that ran and fit, best first by the objective (ties: the earlier point).
std::vector<size_t> ranked_rows(const ResultsTable& t, const Objective& o);
// Rows on the Pareto front of step time against dollars per step, fastest first: none
// faster is as cheap.
std::vector<size_t> pareto_rows(const ResultsTable& t);
// "tp 8 (sp) x pp 16 x dp 8, interleaved v=6, micro-batch 1, ZeRO-1, recompute selective"
std::string layout_text(const SearchPlan& plan, const ResultsTable& t, size_t row);
// A cell as the report prints it: durations with their unit, dollars to three
// significant figures however small, the rest as `memwall report` does.
std::string optimize_cell(const ResultsTable& t, const std::string& col, size_t row);
// `memwall run SPEC --set key=value ...` for a row's layout.
std::string reproduce_command(const SearchPlan& plan, const ResultsTable& t, size_t row);
// The row of the spec's own layout at `gpus` (its dp scaled, SearchPlan::own_by_gpus), or
// at the spec's own count when `gpus` < 0 or has none; -1 when not replayed.
long own_row(const SearchPlan& plan, const ResultsTable& t, double gpus = -1);

struct OptimizeReportOptions {
  Objective objective;
  size_t top = 5;
  std::string results_path;
};
std::string optimize_report_text(const SearchPlan& plan, const ResultsTable& t, const OptimizeReportOptions& o);
// The same as one JSON object (--json): the counts, the best K and the Pareto front, each
// layout with its settings, figures and reproduce line.
nlohmann::ordered_json optimize_report_json(const SearchPlan& plan, const ResultsTable& t,
                                            const OptimizeReportOptions& o);

} // namespace memwall

#pragma once
// The readable report of a sweep results file: the best configurations by one metric,
// the points that did not fit and which device overflowed with what, and the points
// that failed, grouped by their error message.
#include "app/sweep/SweepFile.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace memwall {

struct SweepReportOptions {
  std::string by;                   // ranking metric; "": step_time_s, or output_tokens_per_s when serving
  std::string order;                // "asc" | "desc" | "": highest first for rates, MFU, utilization
  size_t top = 10;                  // rows per table
  std::vector<std::string> columns; // shown after the axes; empty: the key figures that vary
};

// InputError naming `path` when --by, --order or a column is not in the table.
std::string sweep_report_text(const ResultsTable& t, const std::string& path, const SweepReportOptions& o);

// The whole table as CSV (RFC 4180): a header of the columns in table order, one line
// per point, numbers exact (17 significant digits), empty where a point has no value.
std::string sweep_csv(const ResultsTable& t);

// One cell of a results table in the unit a reader expects for its column ("1.5 s",
// "12.00 GiB", "51.3 %", "$1,000", "-" where a point has none).
std::string results_cell(const ResultsTable& t, const std::string& col, size_t row);
// Lines of cells as a table, each column right-aligned to its widest cell (the last
// left-aligned when `last_left`: free text), two spaces apart.
void print_aligned(std::ostream& os, const std::vector<std::vector<std::string>>& cells, bool last_left = false);

// True when larger values of `metric` are better (rates, MFU, utilization).
bool higher_is_better(const std::string& metric);

} // namespace memwall

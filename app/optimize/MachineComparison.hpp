#pragma once
// `memwall optimize A.yaml B.yaml ... --compare`: a purchase study where every machine
// runs its own best layout. From each spec's search, the best layout at each GPU count
// becomes one row of a comparison file (a sweep results file with a `machine` axis, so
// `memwall report` and `memwall plot` read it: days or step time against the hardware's
// price, one line per machine, points labelled with their GPU counts) and of one table.
#include "app/optimize/OptimizeReport.hpp"

#include <string>
#include <vector>

namespace memwall {

struct SearchedMachine {
  std::string name; // the spec file's stem
  SearchPlan plan;
  ResultsTable table;
};

// The rows of the comparison: per machine and GPU count, the best layout by `o`.
struct ComparedRow {
  size_t machine = 0;
  size_t row     = 0; // in that machine's table
};
std::vector<ComparedRow> compared_rows(const std::vector<SearchedMachine>& machines, const Objective& o);

void write_comparison_file(const std::string& path, const std::vector<SearchedMachine>& machines,
                           const std::vector<ComparedRow>& rows);
std::string comparison_text(const std::vector<SearchedMachine>& machines, const std::vector<ComparedRow>& rows,
                            const Objective& o);

} // namespace memwall

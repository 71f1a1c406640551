#pragma once
// Rows of a sweep's results chosen by an expression over their columns, as `report
// --filter` and `plot --filter` take it ("node == 'hgx-b200' and gpus >= 144"): the
// sweep spec's expression language, with a column named in full or, for an axis, by the
// last part of its key (`node` for hardware.node), as the report's header prints it.
#include "app/sweep/SweepFile.hpp"

#include <optional>
#include <string>
#include <vector>

namespace memwall {

// The column a name reaches: itself, or the one axis whose key ends in ".name";
// nullopt when none or several do.
std::optional<std::string> results_column(const ResultsTable& t, const std::string& name);
// The rows where `expr` holds, in order; InputError naming `where` for a bad expression
// or an unknown name. An empty `expr` keeps every row.
std::vector<size_t> filtered_rows(const ResultsTable& t, const std::string& expr, const std::string& where);
// The table with only `rows`.
ResultsTable keep_rows(const ResultsTable& t, const std::vector<size_t>& rows);

} // namespace memwall

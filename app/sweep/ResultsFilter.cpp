#include "app/sweep/ResultsFilter.hpp"

#include "app/sweep/Expression.hpp"
#include "app/sweep/SweepSpec.hpp"
#include "base/InputError.hpp"

#include <cmath>

namespace memwall {

std::optional<std::string> results_column(const ResultsTable& t, const std::string& name)
{
  if (t.numbers.count(name) || t.texts.count(name))
    return name;
  std::optional<std::string> found;
  for (const std::string& a : t.axes)
    if (is_key_tail(a, name)) {
      if (found)
        return std::nullopt; // two axes end that way: the full key is needed
      found = a;
    }
  return found;
}

std::vector<size_t> filtered_rows(const ResultsTable& t, const std::string& expr, const std::string& where)
{
  std::vector<size_t> rows;
  if (expr.empty()) {
    for (size_t r = 0; r < t.rows(); ++r)
      rows.push_back(r);
    return rows;
  }
  Expression e(expr, where);
  for (const std::string& n : e.names())
    if (!results_column(t, n))
      throw InputError(where + ": " + n + " is not a column of this file (nor the last part of one axis)");
  for (size_t r = 0; r < t.rows(); ++r) {
    auto lookup = [&](const std::string& name) -> std::optional<ExprValue> {
      std::string c = *results_column(t, name);
      if (auto x = t.texts.find(c); x != t.texts.end())
        return ExprValue(x->second[r]);
      return ExprValue(t.numbers.at(c)[r]);
    };
    if (e.test(lookup))
      rows.push_back(r);
  }
  return rows;
}

ResultsTable keep_rows(const ResultsTable& t, const std::vector<size_t>& rows)
{
  ResultsTable out = t;
  for (auto& [c, v] : out.numbers) {
    std::vector<double> kept;
    for (size_t r : rows)
      kept.push_back(t.numbers.at(c)[r]);
    v = std::move(kept);
  }
  for (auto& [c, v] : out.texts) {
    std::vector<std::string> kept;
    for (size_t r : rows)
      kept.push_back(t.texts.at(c)[r]);
    v = std::move(kept);
  }
  return out;
}

} // namespace memwall

// The rankings of memwall optimize's report over a hand-made results table: the
// objective's order, only rows that ran and fit, and the Pareto front of step time
// against dollars per step.
#include "app/optimize/OptimizeReport.hpp"
#include "base/InputError.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace memwall;

namespace {

// Rows: (step time, dollars per step, tokens per dollar, fits, status).
ResultsTable table()
{
  ResultsTable t;
  t.numbers["index"]          = {0, 1, 2, 3, 4, 5};
  t.numbers["step_time_s"]    = {1, 2, 3, 4, 0.5, 2};
  t.numbers["usd_per_step"]   = {5, 3, 4, 1, 0.1, 3};
  t.numbers["tokens_per_usd"] = {10, 30, 20, 50, 90, 30};
  t.numbers["fits"]           = {1, 1, 1, 1, 0, 1};
  t.texts["status"]           = {"ok", "ok", "ok", "ok", "ok", "error"};
  return t;
}

} // namespace

TEST_CASE("ranking_keeps_rows_that_ran_and_fit_in_the_objective_order", "[optimize]")
{
  ResultsTable t = table();
  // Row 4 does not fit, row 5 failed: neither is ranked, however good its numbers.
  CHECK(ranked_rows(t, objective_named("time")) == std::vector<size_t>{0, 1, 2, 3});
  CHECK(ranked_rows(t, objective_named("cost")) == std::vector<size_t>{3, 1, 2, 0});
  CHECK(ranked_rows(t, objective_named("tokens_per_dollar")) == std::vector<size_t>{3, 1, 2, 0});
  CHECK_THROWS_AS(objective_named("speed"), InputError);
}

TEST_CASE("the_pareto_front_keeps_a_layout_unless_a_faster_one_is_as_cheap", "[optimize]")
{
  // (1 s, $5), (2 s, $3), (3 s, $4), (4 s, $1): the 3 s layout costs more than the 2 s one.
  CHECK(pareto_rows(table()) == std::vector<size_t>{0, 1, 3});
}

// What `memwall report` prints for a column and which way it ranks it (issue 50): dollars
// only on dollars, a count per dollar as such, each metric's better end first.
#include "app/sweep/SweepReport.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

TEST_CASE("report_prints_dollars_only_on_dollars_and_ranks_each_metric_better_first", "[sweep][report]")
{
  ResultsTable t;
  t.numbers["tokens_per_usd"]      = {476307006};
  t.numbers["usd_per_step"]        = {3.44e-05};
  t.numbers["usd_to_train"]        = {1234.5};
  t.numbers["hardware_cost_usd"]   = {400000};
  t.numbers["energy.usd_per_mwh"]  = {80};
  t.numbers["energy.power_w"]      = {15912};
  t.numbers["energy.usd_per_step"] = {0.0126};
  CHECK(results_cell(t, "tokens_per_usd", 0) == "476,307,006 per $");
  CHECK(results_cell(t, "usd_per_step", 0) == "$3.44e-05");
  CHECK(results_cell(t, "energy.usd_per_step", 0) == "$0.0126");
  CHECK(results_cell(t, "usd_to_train", 0) == "$1,235"); // to the dollar above $100
  CHECK(results_cell(t, "hardware_cost_usd", 0) == "$400,000");
  CHECK(results_cell(t, "energy.usd_per_mwh", 0) == "$80/MWh");
  CHECK(results_cell(t, "energy.power_w", 0) == "15.9 kW");
  // Better first: what a dollar buys and rates highest first; dollars, seconds per step,
  // joules per step and days lowest first.
  for (const char* high : {"tokens_per_usd", "tokens_per_s", "output_tokens_per_s", "mfu", "busiest_link.utilization"})
    CHECK(higher_is_better(high));
  for (const char* low : {"usd_per_step", "energy.usd_per_step", "energy.joules_per_step", "step_time_s",
                          "days_to_train", "hardware_cost_usd", "max_peak_bytes", "gpu_hours"})
    CHECK_FALSE(higher_is_better(low));
}

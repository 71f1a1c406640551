// Hostile sweep specs, each of which could crash, hang, or run every point only to fail
// writing: each is refused up front, one line, exit code 2, no results file.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

using namespace memwall::test;

namespace {

// `memwall sweep` (with --dry-run unless `run`): exit 2, one line, no results file.
std::string refused_sweep_spec(const std::string& name, const std::string& text, bool run = false,
                               const std::string& launcher = "")
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, text);
  std::filesystem::remove(h5);
  CliResult r = run_cli("sweep " + spec + " -o " + h5 + (run ? "" : " --dry-run"), launcher);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(h5));
  return r.err;
}

std::string one_metric(const std::string& entry)
{
  return sweep_base + "grid:\n  training.micro_batch: [1, 2]\nmetrics:\n  " + entry + "\n";
}

} // namespace

TEST_CASE("an_empty_zip_group_is_refused_not_a_segfault", "[robustness][sweep]")
{
  // `zip: {}` made a group with no choices, indexed past its end (exit 139), even with
  // --dry-run.
  CHECK_THAT(refused_sweep_spec("zip_empty", sweep_base + "zip: {}\n"), Catch::Contains("zip: no axes"));
  CHECK_THAT(refused_sweep_spec("zip_list_empty", sweep_base + "zip: [{training.micro_batch: [1]}, {}]\n"),
             Catch::Contains("zip[1]: no axes"));
}

TEST_CASE("deeply_nested_or_overlong_expressions_are_refused_not_a_stack_overflow", "[robustness][sweep]")
{
  // 100,000 unary minus signs or nested parentheses recursed the parser off the stack.
  std::string minus(100000, '-');
  CHECK_THAT(refused_sweep_spec("minus_chain", one_metric("m: \"" + minus + "1\"")),
             Catch::Contains("metrics.m: expression of 100001 characters; the limit is 4096"));
  std::string nested = std::string(1000, '(') + "1" + std::string(1000, ')');
  CHECK_THAT(refused_sweep_spec("nested", one_metric("m: \"" + nested + "\"")),
             Catch::Contains("nested deeper than 100 levels"));
  // 100 levels are fine: the same sweep runs its dry run.
  std::string ok_nested = std::string(99, '(') + "step_time_s" + std::string(99, ')');
  std::string spec      = temp_path("nested_ok.yaml");
  write_file(spec, one_metric("m: \"" + ok_nested + "\""));
  CHECK(run_cli("sweep " + spec + " -o " + temp_path("nested_ok.h5") + " --dry-run").exit_code == 0);
}

TEST_CASE("metric_names_and_expressions_are_checked_before_any_point_runs", "[robustness][sweep]")
{
  // Each of these ran every point and then failed writing the file (exit 3, 0 rows),
  // silently overwrote a result column, or failed every point.
  CHECK_THAT(refused_sweep_spec("metric_index", one_metric("index: '1'"), true),
             Catch::Contains("metrics.index") && Catch::Contains("already a column"));
  CHECK_THAT(refused_sweep_spec("metric_result", one_metric("step_time_s: step_time_s * 2"), true),
             Catch::Contains("'step_time_s' is already a column (a result)"));
  CHECK_THAT(refused_sweep_spec("metric_slash", one_metric("a/b: step_time_s"), true),
             Catch::Contains("metrics.a/b") && Catch::Contains("letters, digits"));
  CHECK_THAT(refused_sweep_spec("metric_empty_name", one_metric("'': step_time_s"), true),
             Catch::Contains("metric's name"));
  CHECK_THAT(refused_sweep_spec("metric_null", one_metric("m: "), true),
             Catch::Contains("metrics.m: expected an expression"));
  CHECK_THAT(refused_sweep_spec("metric_list", one_metric("m: [1, 2]"), true),
             Catch::Contains("metrics.m: expected an expression"));
  CHECK_THAT(refused_sweep_spec("metric_unknown_name", one_metric("m: step_tme_s * 1000"), true),
             Catch::Contains("unknown name 'step_tme_s'"));
  // Names that do exist: an axis by its last part, a result, an earlier metric.
  std::string spec = temp_path("metrics_ok.yaml");
  write_file(spec, one_metric("ms: step_time_s * 1000\n  per_seq: ms / micro_batch\n  peak: gpu.peak_bytes"));
  CliResult ok = run_cli("sweep " + spec + " -o " + temp_path("metrics_ok.h5") + " --dry-run");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("a_bad_source_date_epoch_is_refused_not_1970_or_a_crash", "[robustness][sweep]")
{
  std::string text = sweep_base + "grid:\n  training.micro_batch: [1]\n";
  CHECK_THAT(refused_sweep_spec("epoch_words", text, true, "SOURCE_DATE_EPOCH=yesterday"),
             Catch::Contains("SOURCE_DATE_EPOCH='yesterday'") && Catch::Contains("seconds since 1970"));
  // Past year 9999 gmtime fails: strftime was handed a null pointer (exit 139).
  refused_sweep_spec("epoch_huge", text, true, "SOURCE_DATE_EPOCH=99999999999999");
}

TEST_CASE("a_sweep_of_too_many_points_is_refused_before_it_is_enumerated", "[robustness][sweep]")
{
  // 10 axes of 10 values: 10^10 combinations; the --dry-run never ended.
  std::string grid = "grid:\n";
  for (const char* key :
       {"training.micro_batch", "training.seq_len", "training.global_batch", "training.zero", "training.recompute",
        "training.precision", "training.optimizer", "training.tp", "training.bucket_bytes", "training.flash_attention"})
    grid += std::string("  ") + key + ": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  CHECK_THAT(refused_sweep_spec("ten_billion", sweep_base + grid),
             Catch::Contains("10000000000 points; the limit is 1000000"));
}

TEST_CASE("a_sweep_whose_every_point_failed_is_reported_as_failures_not_a_missing_column", "[robustness][report]")
{
  // tp 5 divides none of GPT-2's 12 heads: both points fail. report said "--by
  // step_time_s: no such column"; it now lists the failures.
  std::string spec = temp_path("all_failed.yaml"), h5 = temp_path("all_failed.h5");
  write_file(spec, "spec:\n  hardware: {node: dgx-a100, gpus_per_node: 5}\n  model: {preset: gpt2}\n"
                   "  training: {seq_len: 256, global_batch: 10, micro_batch: 1}\n"
                   "grid:\n  training.tp: [5]\n  training.micro_batch: [1, 2]\n");
  std::filesystem::remove(h5);
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 1").exit_code == 0);
  CliResult r = run_cli("report " + h5);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("2 points failed") && Catch::Contains("does not divide the model's 12 attention heads"));
}

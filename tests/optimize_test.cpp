// memwall optimize end to end: the best layout it reports is the fastest of the layouts
// it replayed, `memwall run` with its reproduce line gives the very same step time, the
// spec's own layout is replayed beside the ones the axes propose, --resume replays
// nothing again, and bad input is one line and exit 2 with no results file.
#include "app/sweep/SweepFile.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <regex>

using namespace memwall;
using namespace memwall::test;

namespace {

// GPT-2 on one DGX A100 with a layout the axes do not propose (GPipe).
const std::string job = "hardware: {node: dgx-a100}\nmodel: {preset: gpt2}\n"
                        "training: {seq_len: 1024, global_batch: 16, micro_batch: 2, tp: 2, pp: 2, "
                        "pipeline_schedule: gpipe}\n";
// 2 recompute policies x tp 1, 2 x pp 1, 2 and what follows from them.
const std::string axes = "--axis training.recompute=none,full --axis training.tp=1,2 --axis training.pp=1,2 -j 2";

std::string optimize_refused(const std::string& args, const std::string& out)
{
  CliResult r = run_cli("optimize " + args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
  CHECK_FALSE(std::filesystem::exists(out));
  return r.err;
}

} // namespace

TEST_CASE("optimize_reports_the_fastest_replayed_layout_and_run_reproduces_it", "[optimize][cli]")
{
  std::string spec = temp_path("optimize-gpt2.yaml"), out = temp_path("optimize-gpt2.h5");
  write_file(spec, job);
  std::filesystem::remove(out);
  CliResult r = run_cli("optimize " + spec + " " + axes + " -o " + out);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  ResultsTable t = read_sweep_file(out);
  REQUIRE(t.rows() > 20);
  // The fastest row that fits, by the file's own numbers.
  size_t best = t.rows();
  for (size_t i = 0; i < t.rows(); ++i)
    if (t.texts["status"][i] == "ok" && t.numbers["fits"][i] == 1 &&
        (best == t.rows() || t.numbers["step_time_s"][i] < t.numbers["step_time_s"][best]))
      best = i;
  REQUIRE(best < t.rows());
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("reproduce #1: memwall run (\\S+)((?: --set \\S+)*)")));
  CHECK(m[1] == spec);
  nlohmann::json j = nlohmann::json::parse(run_cli(std::string("run ") + m[1].str() + m[2].str() + " --json").out);
  CHECK(j["step_time_s"].get<double>() == t.numbers["step_time_s"][best]);
  // The spec's own GPipe layout was replayed too, and the report weighs #1 against it.
  bool gpipe = false;
  for (size_t i = 0; i < t.rows(); ++i)
    gpipe = gpipe || t.texts["training.pipeline_schedule"][i] == "gpipe";
  CHECK(gpipe);
  CHECK(r.out.find("against the spec's own layout (tp 2 x pp 2 x dp 2, gpipe") != std::string::npos);

  SECTION("resume_replays_nothing_again_and_prints_the_same_report")
  {
    CliResult again = run_cli("optimize " + spec + " " + axes + " -o " + out + " --resume");
    CHECK(again.exit_code == 0);
    CHECK(again.out == r.out);
    CHECK(again.err.find(" kept from " + out + " and 0 replayed") != std::string::npos);
  }
  SECTION("json_reports_the_same_best_layout_and_its_reproduce_line")
  {
    CliResult js = run_cli("optimize " + spec + " " + axes + " -o " + out + " --resume --json --top 3");
    REQUIRE(js.exit_code == 0);
    nlohmann::json j = nlohmann::json::parse(js.out);
    CHECK(j["best"].size() == 3);
    CHECK(j["best"][0]["step_time_s"].get<double>() == t.numbers["step_time_s"][best]);
    CHECK("reproduce #1: " + j["best"][0]["reproduce"].get<std::string>() == m[0].str());
    CHECK(j["replayed"].get<size_t>() == t.rows());
    CHECK(j["own"]["settings"]["training.pipeline_schedule"] == "gpipe");
  }
  SECTION("the_cost_objective_ranks_by_dollars_per_step")
  {
    CliResult cost = run_cli("optimize " + spec + " " + axes + " -o " + out + " --resume --objective cost");
    CHECK(cost.out.find("best 5 by usd_per_step") != std::string::npos);
  }
}

TEST_CASE("optimize_refuses_bad_input_with_one_line_and_no_results_file", "[optimize][cli]")
{
  std::string spec = temp_path("optimize-bad.yaml"), out = temp_path("optimize-bad.h5");
  write_file(spec, job);
  std::filesystem::remove(out);
  CHECK_THAT(optimize_refused(spec + " -o " + out + " --objective speed", out),
             Catch::Contains("expected time, cost, energy or tokens_per_dollar"));
  CHECK_THAT(optimize_refused(spec + " -o " + out + " --gpus 7", out), Catch::Contains("dgx-a100 nodes (8 GPUs"));
  CHECK_THAT(optimize_refused(spec + " -o " + out + " --gpus 8 --gpus-range 8:64", out), Catch::Contains("not both"));
  CHECK_THAT(optimize_refused(spec + " -o " + out + " --gpus-range 64:8", out), Catch::Contains("expected A:B"));
  CHECK_THAT(optimize_refused(spec + " -o " + out + " --axis training.tp=x", out),
             Catch::Contains("not a whole number"));
  CHECK_THAT(optimize_refused(spec + " --resume", out), Catch::Contains("--resume needs -o"));
  CHECK_THAT(optimize_refused(spec + " -o " + spec, spec + ".none"), Catch::Contains(spec));
  CHECK(read_file(spec) == job); // the spec given as the output is untouched
  std::string serving = temp_path("optimize-serving.yaml");
  write_file(serving, small_serving_spec);
  CHECK_THAT(optimize_refused(serving + " -o " + out, out), Catch::Contains("serve-capacity"));
  // Without --gpus the spec's own layout is the one it would run: it must be valid.
  CHECK_THAT(optimize_refused(spec + " -o " + out + " --set training.tp=3", out), Catch::Contains("does not divide"));
}

TEST_CASE("optimize_on_other_gpus_weighs_the_spec_own_layout_with_its_dp_scaled", "[optimize][cli]")
{
  // dp 2 on 2 GPUs cannot be the layout of 8; the search sets every layout key anyway:
  // tp 1 x pp 1 x dp 8 with micro-batches 1 and 2 (the divisors of 16 / 8). The spec's
  // own layout at 8 GPUs is its own with dp 8: micro-batch 1, the slower of the two.
  std::string spec = temp_path("optimize-dp2.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 16, micro_batch: 1, dp: 2}\n");
  CliResult r = run_cli("optimize " + spec +
                        " --gpus 8 --axis training.tp=1 --axis training.pp=1 --axis training.recompute=none "
                        "--axis training.zero=0 -j 1");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("2 layouts enumerated: 0 invalid") != std::string::npos);
  CHECK(r.out.find("reproduce #1: memwall run " + spec + " --set hardware.gpus_per_node=8 --set training.dp=8") !=
        std::string::npos);
  CHECK(r.out.find("against the spec's own layout at 8 GPUs, dp scaled (tp 1 x pp 1 x dp 8, micro-batch 1,") !=
        std::string::npos);
}

TEST_CASE("compare_keeps_each_machine_best_layout_at_each_gpu_count", "[optimize][cli]")
{
  std::string a100 = temp_path("cmp-a100.yaml"), h100 = temp_path("cmp-h100.yaml"), out = temp_path("cmp.h5");
  for (const auto& [path, node] : {std::pair{a100, "dgx-a100"}, std::pair{h100, "dgx-h100"}})
    write_file(path, std::string("hardware: {node: ") + node +
                         "}\nmodel: {preset: gpt2}\ntraining: {seq_len: 1024, global_batch: 16, micro_batch: 2}\n");
  CliResult r = run_cli("optimize " + a100 + " " + h100 +
                        " --compare --gpus-range 2:4 --axis training.recompute=none --axis training.pp=1 "
                        "--tokens 1e9 -j 2 -o " +
                        out);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // Each machine's timing sources by part; the A100 fit holds no host copy curves, the H100's does.
  CHECK_THAT(r.out, Catch::Contains("timed by part") && Catch::Contains("cmp-a100") &&
                        Catch::Contains("warning: host copies are measured on some machines and estimated on others"));
  ResultsTable cmp = read_sweep_file(out);
  REQUIRE(cmp.rows() == 4); // 2 machines x 2 and 4 GPUs
  for (size_t i = 0; i < cmp.rows(); ++i) {
    std::string machine = cmp.texts["machine"][i];
    double gpus         = cmp.numbers["gpus"][i];
    // The machine's own search file: no fitting layout at that count is faster.
    ResultsTable all = read_sweep_file(temp_path("cmp-" + machine + ".h5"));
    double fastest   = INFINITY;
    for (size_t j = 0; j < all.rows(); ++j)
      if (all.numbers["gpus"][j] == gpus && all.numbers["fits"][j] == 1)
        fastest = std::min(fastest, all.numbers["step_time_s"][j]);
    CHECK(cmp.numbers["step_time_s"][i] == fastest);
    // Days to train 1e9 tokens: the budget over the replayed rate.
    CHECK(cmp.numbers["days_to_train"][i] == Approx(1e9 / cmp.numbers["tokens_per_s"][i] / 86400));
  }
}

TEST_CASE("compare_options_are_refused_where_they_do_not_apply", "[optimize][cli]")
{
  std::string spec = temp_path("cmp-bad.yaml"), out = temp_path("cmp-bad.h5");
  write_file(spec, job);
  CHECK_THAT(optimize_refused(spec + " " + spec + " -o " + out, out), Catch::Contains("add --compare"));
  CHECK_THAT(optimize_refused(spec + " --compare -o " + out, out), Catch::Contains("two specs or more"));
  CHECK_THAT(optimize_refused(spec + " --plot " + temp_path("x.png"), out),
             Catch::Contains("--plot draws a --compare"));
  CHECK_THAT(optimize_refused(spec + " " + spec + " --compare --plot " + temp_path("x.jpg"), out),
             Catch::Contains("name it *.png"));
}

TEST_CASE("optimize_searches_gpu_counts_whose_plain_data_parallel_layout_is_invalid", "[optimize][cli]")
{
  // 12 sequences cannot split over dp = 8, so the job on 8 GPUs has no valid layout
  // without model parallelism; the search still finds those with tp x pp >= 2 (the
  // README's GPT-3 example: 1,536 sequences on 1,024 GPUs).
  std::string spec = temp_path("optimize-batch12.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 12, micro_batch: 1}\n");
  CliResult r = run_cli("optimize " + spec + " --gpus 8 --dry-run");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find(" 0 to replay") == std::string::npos);
  CHECK(r.out.find("training.dp: [4,") != std::string::npos);
}

TEST_CASE("a_dry_run_with_json_prints_its_counts_and_sweep_as_json", "[optimize][cli]")
{
  // --json held for the report alone: `--dry-run --json` printed the text and the sweep's
  // YAML (the fuzzer's finding). Its counts are the text's; the sweep is what `memwall
  // sweep` runs.
  std::string spec = temp_path("optimize-dry-json.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 12, micro_batch: 1}\n");
  CliResult text = run_cli("optimize " + spec + " --gpus 8 --dry-run");
  CliResult json = run_cli("optimize " + spec + " --gpus 8 --dry-run --json");
  INFO(json.err);
  REQUIRE(json.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(json.out);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 1);
  const nlohmann::json& plan = j[0];
  CHECK(plan["spec"] == spec);
  std::string counts = std::to_string(plan["enumerated"].get<int64_t>()) + " layouts enumerated, " +
                       std::to_string(plan["invalid"].get<int64_t>()) + " invalid, " +
                       std::to_string(plan["cannot_fit"].get<int64_t>()) + " cannot fit, " +
                       std::to_string(plan["to_replay"].get<int64_t>()) + " to replay\n";
  CHECK(text.out.rfind(counts, 0) == 0);
  CHECK(text.out.substr(counts.size()) == plan["sweep"].get<std::string>());
  int64_t refused = 0;
  for (const auto& [key, n] : plan["invalid_by_key"].items())
    refused += n.get<int64_t>();
  CHECK(refused == plan["invalid"].get<int64_t>());
}

TEST_CASE("a_search_past_its_layout_limit_is_refused_naming_what_narrows_it", "[optimize][cli]")
{
  std::string spec = temp_path("optimize-huge.yaml"), out = temp_path("optimize-huge.h5");
  write_file(spec, job);
  std::string batches = "1", chunks = "1";
  for (int v = 2; v <= 500; ++v)
    batches += "," + std::to_string(v);
  for (int v = 2; v <= 60; ++v)
    chunks += "," + std::to_string(v);
  // 500 micro-batches x 2 schedules x 60 chunk counts is 60,000 layouts per tp x pp already.
  CHECK_THAT(optimize_refused(spec + " -o " + out + " --axis training.micro_batch=" + batches +
                                  " --axis training.virtual_stages=" + chunks,
                              out),
             Catch::Contains("more than 100000 layouts") && Catch::Contains("--axis"));
}

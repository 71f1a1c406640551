// The layouts `memwall optimize` enumerates: every axis's values given the choices
// before it, counted by hand for a small job, and --axis options that replace an axis's
// values or are refused naming what is allowed.
#include "app/optimize/LayoutSearch.hpp"
#include "app/optimize/LayoutSpace.hpp"
#include "base/InputError.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace memwall;
using namespace memwall::test;

namespace {

// GPT-2 (12 layers, 12 heads) on one DGX A100 (8 GPUs), 16 sequences of 1,024 tokens.
const std::string gpt2_job = "hardware: {node: dgx-a100}\nmodel: {preset: gpt2}\n"
                             "training: {seq_len: 1024, global_batch: 16, micro_batch: 1}\n";

ExperimentSpec job(const std::string& yaml) { return parse_spec(yaml, "job.yaml", "."); }

} // namespace

TEST_CASE("divisors_are_every_whole_divisor_in_ascending_order", "[optimize]")
{
  CHECK(divisors(1) == std::vector<int64_t>{1});
  CHECK(divisors(12) == std::vector<int64_t>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(49) == std::vector<int64_t>{1, 7, 49});
  CHECK(divisors(97) == std::vector<int64_t>{1, 97});
}

TEST_CASE("gpt2_on_one_dgx_a100_has_the_hand_counted_228_layouts_without_recompute", "[optimize]")
{
  // By hand, tp in {1, 2, 4} (8 does not divide 12 heads), pp dividing 12 with tp x pp
  // dividing 8, cp 1 (1,024 tokens), dp = 8 / (tp pp), micro-batches dividing 16 / dp,
  // 1f1b plus interleaved with v dividing 12 / pp (v > 1), sp on and off when tp > 1,
  // ZeRO 0 and 1 (Megatron) when dp > 1, recompute none only (--axis), and beside each
  // even split a lighter last stage that leaves the rest even (pp 2: 7 + 5 layers, 1f1b
  // only; pp 4 has none: 11, 10 and 9 layers do not split over 3 stages; pp 8 none at all):
  //   tp pp dp  micro-batches  schedules      sp  zero
  //    1  1  8      2              1           1    2   =  4
  //    1  2  4      3          1 + 3 + 1       1    2   = 30
  //    1  4  2      4          1 + 1           1    2   = 16
  //    2  1  4      3              1           2    2   = 12
  //    2  2  2      4          1 + 3 + 1       2    2   = 80
  //    2  4  1      5          1 + 1           2    1   = 20
  //    4  1  2      4              1           2    2   = 16
  //    4  2  1      5          1 + 3 + 1       2    1   = 50      228 in all
  ExperimentSpec spec = job(gpt2_job);
  SearchSpace space{spec, 8, 8};
  AxisValues only                    = parse_axis_options({"training.recompute=none"});
  std::vector<PartialLayout> layouts = enumerate_layouts(space, only);
  CHECK(layouts.size() == 228);
  std::set<std::vector<std::pair<std::string, std::string>>> distinct;
  for (const PartialLayout& l : layouts) {
    distinct.insert(l.settings);
    CHECK(l.t.tp * l.t.pp * l.t.dp == 8);
    CHECK(16 % (l.t.micro_batch * l.t.dp) == 0);
  }
  CHECK(distinct.size() == layouts.size());
  // Every layout names the same keys in the same order: they are one table's columns.
  std::vector<std::string> keys;
  for (const auto& [k, v] : layouts.front().settings)
    keys.push_back(k);
  CHECK(keys == searched_keys(space));
  CHECK(std::find(keys.begin(), keys.end(), "training.ep") == keys.end()); // a dense model
}

TEST_CASE("axis_option_replaces_an_axis_values_and_the_rest_follow_from_them", "[optimize]")
{
  ExperimentSpec spec = job(gpt2_job);
  SearchSpace space{spec, 8, 8};
  // tp 2 x pp 4 x dp 1 only: 5 micro-batches (divisors of 16), 1f1b or interleaved v=3,
  // sp on/off, ZeRO-0 (nothing to shard over), 3 recompute policies = 5 x 2 x 2 x 3 = 60.
  AxisValues only = parse_axis_options({"training.tp=2", "training.pp=4"});
  CHECK(enumerate_layouts(space, only).size() == 60);
}

TEST_CASE("a_malformed_axis_option_is_refused_naming_what_is_allowed", "[optimize]")
{
  CHECK_THROWS_WITH(parse_axis_options({"training.tpp=2"}),
                    Catch::Contains("training.tp,") && Catch::Contains("--axis 'training.tpp=2'"));
  CHECK_THROWS_WITH(parse_axis_options({"training.tp"}), Catch::Contains("expected KEY=V1,V2"));
  CHECK_THROWS_WITH(parse_axis_options({"training.tp=2,,4"}), Catch::Contains("an empty value"));
  CHECK_THROWS_WITH(parse_axis_options({"training.tp=two"}), Catch::Contains("not a whole number"));
  CHECK_THROWS_WITH(parse_axis_options({"training.zero=4"}), Catch::Contains("not a ZeRO stage"));
  CHECK_THROWS_WITH(parse_axis_options({"training.recompute=some"}), Catch::Contains("none, selective, full"));
  CHECK_THROWS_WITH(parse_axis_options({"training.sp=yes"}), Catch::Contains("true or false"));
  CHECK_THROWS_WITH(parse_axis_options({"training.stack=jax"}), Catch::Contains("unknown training stack"));
  CHECK_THROWS_WITH(parse_axis_options({"training.tp=2", "training.tp=4"}), Catch::Contains("given twice"));
  // A value twice would replay one layout twice.
  CHECK_THROWS_WITH(parse_axis_options({"training.tp=2,4,2"}), Catch::Contains("--axis training.tp: 2 twice"));
}

TEST_CASE("an_axis_is_named_by_its_key_or_by_the_name_list_layout_axes_prints", "[optimize]")
{
  // `memwall list layout-axes` prints "tp  training.tp  ...": either names the axis.
  AxisValues by_name = parse_axis_options({"tp=2", "micro_batch=1,2"});
  AxisValues by_key  = parse_axis_options({"training.tp=2", "training.micro_batch=1,2"});
  CHECK(by_name == by_key);
  CHECK(by_name.at("training.micro_batch") == std::vector<std::string>{"1", "2"});
  CHECK_THROWS_WITH(parse_axis_options({"tp=2", "training.tp=4"}), Catch::Contains("given twice"));
}

TEST_CASE("expert_parallel_axes_appear_for_a_mixture_of_experts_model_only", "[optimize]")
{
  // Mixtral 8x7B (8 experts) on one DGX H100: ep divides the 8 experts and the
  // tp x dp ranks; etp is 1 or tp.
  ExperimentSpec spec = job("hardware: {node: dgx-h100}\nmodel: {preset: mixtral-8x7b}\n"
                            "training: {seq_len: 4096, global_batch: 64, micro_batch: 1, tp: 2, sp: true}\n");
  SearchSpace space{spec, 8, 8};
  std::vector<std::string> keys = searched_keys(space);
  CHECK(std::find(keys.begin(), keys.end(), "training.ep") != keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "training.etp") != keys.end());
  for (const PartialLayout& l : enumerate_layouts(space, parse_axis_options({"training.recompute=full"}))) {
    CHECK(8 % l.t.ep == 0);
    CHECK((l.t.tp * l.t.dp) % (l.t.ep * l.t.etp) == 0);
    CHECK((l.t.etp == 1 || l.t.etp == l.t.tp));
  }
}

TEST_CASE("gpu_range_doubles_from_its_start_to_its_end", "[optimize]")
{
  CHECK(gpu_range("8:64") == std::vector<int64_t>{8, 16, 32, 64});
  CHECK(gpu_range("3:20") == std::vector<int64_t>{3, 6, 12});
  CHECK(gpu_range("5:5") == std::vector<int64_t>{5});
  for (const char* bad : {"8", "8:4", "0:8", "a:8", "8:1e9", ":8", "8:"})
    CHECK_THROWS_WITH(gpu_range(bad), Catch::Contains("expected A:B"));
}

TEST_CASE("an_uneven_pipeline_is_searched_where_no_even_split_exists", "[optimize]")
{
  // 61 layers (DeepSeek-V3's count) have no even split over 2 < pp: the end-stage axes
  // give the first stage fewer layers so that the rest split evenly. pp 4: a first stage
  // of 13 leaves 48 = 3 x 16 (16 > 13); then a last stage of 14 would leave 34 over 2 = 17.
  CHECK(lighter_end_stage(61, 4) == std::vector<int64_t>{13});
  CHECK(lighter_end_stage(48, 3) == std::vector<int64_t>{0, 14});
  CHECK(lighter_end_stage(12, 2) == std::vector<int64_t>{0, 5});
  CHECK(lighter_end_stage(12, 4) == std::vector<int64_t>{0});
  CHECK(lighter_end_stage(12, 8).empty());
  ExperimentSpec spec = job("hardware: {node: dgx-a100}\nmodel: {preset: gpt2, layers: 61}\n"
                            "training: {seq_len: 1024, global_batch: 16, micro_batch: 1}\n");
  SearchSpace space{spec, 8, 8};
  AxisValues only = parse_axis_options({"training.tp=1", "training.pp=4", "training.recompute=none"});
  std::set<std::pair<int64_t, int64_t>> splits;
  for (const PartialLayout& l : enumerate_layouts(space, only)) {
    splits.insert({l.t.first_stage_layers, l.t.last_stage_layers});
    CHECK(l.t.pipeline_schedule->name() == "1f1b"); // Megatron interleaves even splits only
  }
  CHECK(splits == std::set<std::pair<int64_t, int64_t>>{{13, 0}, {13, 14}});
}

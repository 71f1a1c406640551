// A run whose outputs are only the summary (--json, the text report, a sweep point,
// memwall advise) keeps the records of the ops the summary reads, not one per op
// (ReplayOptions::summary_records_only). The summary must not change by one byte.
#include "ChildPool.hpp"
#include "Simulation.hpp"
#include "StepReport.hpp"
#include "TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// The --json summary and the number of op records, with every record or the summary's.
std::pair<std::string, size_t> summary(const ExperimentSpec& spec, bool all_records)
{
  ChildOutcome out = run_in_child([&] {
    RunResult r = simulate(spec, false, {false, true, all_records});
    return std::to_string(r.ops.size()) + "\n" + report_json(r).dump(2);
  });
  REQUIRE(out.kind == ChildOutcome::Kind::result);
  size_t cut = out.data.find('\n');
  return {out.data.substr(cut + 1), std::stoul(out.data.substr(0, cut))};
}

} // namespace

TEST_CASE("a_summary_from_the_summarys_records_only_is_byte_identical", "[coalescing][outputs]")
{
  // Pipelined tensor parallelism (the breakdown's bubble), ZeRO-3 (exposed gathers),
  // ZeRO-Offload (the host's optimizer step), and a single GPU.
  for (const char* example : {"examples/gpt3-175b-tp8-pp8-interleaved-8xdgx-a100.yaml",
                              "examples/llama2-70b-zero3-4xdgx-h100.yaml",
                              "examples/llama2-13b-zero-offload-4x4090.yaml", "examples/gpt2-1gpu-a100.yaml"}) {
    INFO(example);
    ExperimentSpec spec = load_spec(source_path(example), {});
    auto [all, every_op]   = summary(spec, true);
    auto [lean, kept]      = summary(spec, false);
    CHECK(lean == all);
    CHECK(kept <= every_op);
  }
}

TEST_CASE("a_pipeline_keeps_the_records_of_its_first_stage_only", "[coalescing][outputs]")
{
  // 8 stages, one GPU each: the breakdown reads the first stage's ops, 1/8 or so.
  ExperimentSpec spec = load_spec(source_path("examples/gpt3-175b-tp8-pp8-interleaved-8xdgx-a100.yaml"), {});
  auto [all, every_op] = summary(spec, true);
  auto [lean, kept]    = summary(spec, false);
  CHECK(kept * 6 < every_op);
}

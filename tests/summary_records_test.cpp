// A run whose outputs are only the summary (--json, the text report, a sweep point,
// memwall advise) keeps no record per op and no memory timeline: the breakdown's GPU
// adds its busy intervals as its ops end (StepIntervals), the pools keep their peaks.
// The summary must not change by one byte, and what the run holds must not grow with
// the ops it replays.
#include "analysis/StepReport.hpp"
#include "base/ChildPool.hpp"
#include "sim/Simulation.hpp"
#include "sim/result/StepIntervals.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace memwall;
using namespace memwall::test;

namespace {

struct Lean {
  std::string json;
  size_t records = 0, timeline_events = 0, intervals = 0;
  int64_t ops = 0;
};

// The --json summary, with every record and timeline or with the summary's needs only.
Lean summary(const ExperimentSpec& spec, bool everything)
{
  ChildOutcome out = run_in_child([&] {
    RunResult r   = simulate(spec, false, {false, true, everything, everything});
    size_t events = 0;
    for (const PoolResult& p : r.pools)
      events += p.timeline.size();
    const StepIntervals& s = r.step_intervals;
    size_t intervals       = s.compute.intervals().size() + s.comm.intervals().size() + s.copies.intervals().size() +
                       s.paging.intervals().size();
    return std::to_string(r.ops.size()) + " " + std::to_string(events) + " " + std::to_string(intervals) + " " +
           std::to_string(r.op_count) + "\n" + report_json(r).dump(2);
  });
  REQUIRE(out.kind == ChildOutcome::Kind::result);
  Lean l;
  size_t cut = out.data.find('\n');
  std::istringstream head(out.data.substr(0, cut));
  head >> l.records >> l.timeline_events >> l.intervals >> l.ops;
  l.json = out.data.substr(cut + 1);
  return l;
}

// The union of closed intervals taken independently from the records, for comparison:
// sort, then merge each into the last when it starts at or before the last's end.
std::vector<std::pair<double, double>> sorted_union(std::vector<std::pair<double, double>> v)
{
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& iv : v)
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  return out;
}

} // namespace

TEST_CASE("a_summary_without_records_or_timelines_is_byte_identical", "[coalescing][outputs]")
{
  // Pipelined tensor parallelism (the breakdown's bubble), ZeRO-3 (exposed gathers),
  // ZeRO-Offload (the host's optimizer step), a single GPU, and a serving loop that
  // hands the replay its iterations one by one.
  for (const char* example :
       {"examples/gpt3-175b-tp8-pp8-interleaved-8xdgx-a100.yaml", "examples/llama2-70b-zero3-4xdgx-h100.yaml",
        "examples/llama2-13b-zero-offload-4x4090.yaml", "examples/gpt2-1gpu-a100.yaml",
        "examples/llama2-7b-serving-poisson-1xa100.yaml"}) {
    INFO(example);
    ExperimentSpec spec = load_spec(source_path(example), {});
    Lean all            = summary(spec, true);
    Lean lean           = summary(spec, false);
    CHECK(lean.json == all.json);
    CHECK(all.records == static_cast<size_t>(all.ops));
    CHECK(all.timeline_events > 0);
    CHECK(lean.records == 0);
    CHECK(lean.timeline_events == 0);
    CHECK(lean.ops == all.ops);
  }
}

TEST_CASE("a_serving_loop_holds_a_few_busy_intervals_not_one_per_op", "[coalescing][outputs]")
{
  // 1,000 requests at 8 per second: 900,110 ops, iterations back to back while
  // requests wait (about 56 in flight), so the GPU's kernels make a handful of intervals
  // (one, in fact), not one per op.
  ExperimentSpec spec = load_spec(source_path("examples/llama2-7b-serving-poisson-1xa100.yaml"), {});
  Lean lean           = summary(spec, false);
  CHECK(lean.ops > 500000);
  CHECK(lean.intervals > 0);
  CHECK(lean.intervals * 100 < static_cast<size_t>(lean.ops));
}

TEST_CASE("an_interval_union_is_the_same_whatever_order_its_parts_arrive_in", "[outputs]")
{
  // By hand: [0,1] and [1,2] touch and are one; [3,4] and [5,6] are joined by [3.5,5].
  IntervalUnion u;
  for (auto [a, b] : std::vector<std::pair<double, double>>{{5, 6}, {1, 2}, {3, 4}, {0, 1}, {3.5, 5}, {8, 8}})
    u.add(a, b);
  using V = std::vector<std::pair<double, double>>;
  CHECK(u.intervals() == V{{0, 2}, {3, 6}, {8, 8}});
  CHECK(u.length() == 5.0);

  // Random sets in random orders against sort-then-merge.
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> start(0, 100), len(0, 3);
  for (int trial = 0; trial < 200; ++trial) {
    V parts;
    for (int i = 0; i < 60; ++i) {
      double s = start(rng);
      parts.emplace_back(s, s + len(rng));
    }
    parts.push_back(parts[3]);                                // a duplicate
    parts.emplace_back(parts[5].second, parts[5].second + 1); // one that touches
    std::shuffle(parts.begin(), parts.end(), rng);
    IntervalUnion v;
    for (auto [a, b] : parts)
      v.add(a, b);
    REQUIRE(v.intervals() == sorted_union(parts));
  }
}

TEST_CASE("a_numbered_op_name_reads_in_full_and_adds_nothing_to_the_name_table", "[outputs]")
{
  OpName first("it", 7, ".embed");
  size_t before = OpName::interned_count();
  for (uint64_t i = 0; i < 100000; ++i)
    OpName n("it", i, ".embed");
  CHECK(OpName::interned_count() == before);
  CHECK(first.str() == "it7.embed");
  CHECK(OpName("it", 123456, ".head").str() == "it123456.head");
  CHECK(first == OpName("it", 7, ".embed"));
  CHECK(!(first == OpName("it", 8, ".embed")));
  // Past what a handle holds, the whole name is interned and still reads right.
  CHECK(OpName("it", 5000000000ULL, ".head").str() == "it5000000000.head");
}

TEST_CASE("a_renumbered_op_name_equals_the_name_built_with_that_number", "[outputs]")
{
  OpName send("pp.send_act.vs3.mb", 0, "");
  size_t before = OpName::interned_count();
  CHECK(send.numbered(17) == OpName("pp.send_act.vs3.mb", 17, ""));
  CHECK(send.numbered(17).str() == "pp.send_act.vs3.mb17");
  CHECK(OpName::interned_count() == before); // renumbering interns nothing
  OpName embed("it", 7, ".embed");
  CHECK(embed.numbered(5000000000ULL).str() == "it5000000000.embed"); // past a handle: whole
  CHECK(OpName("host").numbered(2).str() == "host2");                 // no pattern: appended
}

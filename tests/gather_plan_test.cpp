// ZeRO-3's gather plans as the stacks answer them (TrainingStack::plan_gathers): which
// use all-gathers, at which use it is issued, whose free it waits for and after which
// use it is freed. The step generator emits them as told (ParamGather).
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

constexpr size_t none = UseGather::none;

// Five uses of blocks with parameters to gather (a forward of three blocks, the first
// two backwards), `empty` the one with nothing to gather.
std::vector<ParamUse> five_uses(size_t empty = none)
{
  static const std::vector<double> tensors;
  std::vector<ParamUse> uses;
  for (size_t j = 0; j < 5; ++j)
    uses.push_back({&tensors, static_cast<int64_t>(j < 3 ? j : 4 - j), j < 3, false, j == empty ? 0.0 : 1e6});
  return uses;
}

} // namespace

TEST_CASE("zero3s_window_issues_each_gather_depth_uses_ahead_once_the_buffer_before_them_is_freed", "[zero][gather]")
{
  // Depth k: use j's gather is issued when use j - k starts and waits for the free of
  // use j - 1 - k, so at most k + 1 buffers are alive; each is freed after its use.
  struct Want {
    size_t depth;
    std::vector<size_t> issued_at, waits_for;
  };
  for (const Want& w : {Want{0, {0, 1, 2, 3, 4}, {none, 0, 1, 2, 3}}, Want{1, {0, 0, 1, 2, 3}, {none, none, 0, 1, 2}},
                        Want{2, {0, 0, 0, 1, 2}, {none, none, none, 0, 1}}}) {
    INFO("depth " << w.depth);
    GatherPlan plan = prefetched_gathers(five_uses(), w.depth);
    REQUIRE(plan.size() == 5);
    for (size_t j = 0; j < 5; ++j) {
      CHECK(plan[j].buffer == j);
      CHECK(plan[j].issued_at == w.issued_at[j]);
      CHECK(plan[j].waits_for == w.waits_for[j]);
      CHECK(plan[j].freed_after == j);
    }
  }
}

TEST_CASE("a_use_with_nothing_to_gather_has_no_buffer_and_no_gather_waits_for_it", "[zero][gather]")
{
  GatherPlan plan = prefetched_gathers(five_uses(1), 1);
  CHECK(plan[1].buffer == none);
  CHECK(plan[3].waits_for == none); // it would have waited for use 1's free
  CHECK(plan[4].waits_for == 2);
}

TEST_CASE("fsdp2_gathers_the_next_unit_while_this_one_runs_and_reshards_each_after_its_use", "[zero][gather][fsdp]")
{
  // FSDP2's implicit prefetch (training.zero_prefetch 1, the default): use j's all-gather
  // is issued as use j - 1 starts and waits for use j - 2's buffer to be freed.
  TrainingConfig cfg;
  GatherPlan plan = default_training_stack("fsdp")->plan_gathers(five_uses(), cfg);
  REQUIRE(plan.size() == 5);
  for (size_t j = 0; j < 5; ++j) {
    INFO("use " << j);
    CHECK(plan[j].buffer == j);
    CHECK(plan[j].issued_at == (j == 0 ? 0 : j - 1));
    CHECK(plan[j].waits_for == (j < 2 ? none : j - 2));
    CHECK(plan[j].freed_after == j);
  }
  // Explicit prefetch of the next two units (set_modules_to_forward_prefetch).
  cfg.zero_prefetch = 2;
  CHECK(default_training_stack("fsdp")->plan_gathers(five_uses(), cfg)[4].issued_at == 2);
}

// The breadth-first pipeline schedule (looped_bfs), added as one file in
// workloads/training/schedule/impl/ and checked here against PyTorch's
// ScheduleLoopedBFS order and the bubble and memory it implies.
#include "analysis/StepReport.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace memwall;

namespace {

// 4 identical stages of 2 layers on one DGX A100 (a 128-token vocabulary makes the
// embedding and head negligible), m micro-batches, v chunks per stage.
RunResult bfs_pipeline(const std::string& schedule, int micro_batches, int chunks)
{
  return simulate(parse_spec("hardware: {node: dgx-a100, gpus_per_node: 4}\n"
                             "model: {layers: 8, hidden: 4096, heads: 32, vocab: 128, max_seq_len: 2048}\n"
                             "training: {seq_len: 2048, micro_batch: 1, pp: 4, optimizer: sgd, global_batch: " +
                                 std::to_string(micro_batches) + ", pipeline_schedule: " + schedule +
                                 ", virtual_stages: " + std::to_string(chunks) + "}\n",
                             "test.yaml", ""),
                  true);
}

double first_stage_activations(const RunResult& r)
{
  for (const auto& p : r.pools)
    if (p.device == DeviceRef{DeviceKind::gpu, 0, 0})
      return p.max_by_category[static_cast<size_t>(MemCategory::activations)];
  return 0;
}

} // namespace

TEST_CASE("looped_bfs_runs_every_micro_batch_through_a_chunk_before_the_next_and_backwards_in_reverse", "[pp]")
{
  // torch.distributed.pipelining ScheduleLoopedBFS._calculate_single_rank_operations,
  // 2 local stages, 3 micro-batches: F(c0: 0 1 2) F(c1: 0 1 2) B(c1: 2 1 0) B(c0: 2 1 0),
  // the same on every rank (only the idle padding before it differs).
  const std::vector<PipelineSlot> by_hand = {{0, 0, true},  {1, 0, true},  {2, 0, true},  {0, 1, true},
                                             {1, 1, true},  {2, 1, true},  {2, 1, false}, {1, 1, false},
                                             {0, 1, false}, {2, 0, false}, {1, 0, false}, {0, 0, false}};
  auto schedule                           = default_pipeline_schedule("looped_bfs");
  for (int64_t stage : {0, 3}) {
    const std::vector<PipelineSlot> order = schedule->order(stage, 4, 2, 3);
    REQUIRE(order.size() == by_hand.size());
    for (size_t i = 0; i < order.size(); ++i) {
      INFO("stage " << stage << " slot " << i);
      CHECK(order[i].micro_batch == by_hand[i].micro_batch);
      CHECK(order[i].chunk == by_hand[i].chunk);
      CHECK(order[i].forward == by_hand[i].forward);
    }
  }
}

TEST_CASE("the_looped_bfs_bubble_is_p_minus_1_over_v_m_plus_the_sends_and_the_heads_pace", "[pp]")
{
  // By hand, with chunk passes of f and b and stage-to-stage sends of s_f and s_b: with
  // m >= P a stage never waits between chunks, and the first stage idles once, between
  // its last forward and its first backward, while the last micro-batch goes down the
  // other P - 1 stages and its gradient comes back: (P - 1)(f + b + s_f + s_b). Over its
  // v m (f + b) of passes that is (P - 1)/(v m) (Lamy-Poirier 2023, §3; the interleaved
  // schedule's) and the sends' share. The backward of the first stage's last chunk is
  // paced by the last stage's last chunk, which also runs the head's backward (final
  // norm, logits, loss): each of the m micro-batches waits that long, less the
  // embedding's backward where the same chunk holds it (v = 1). P = 4, m = 8.
  for (int chunks : {1, 2}) {
    const RunResult r = bfs_pipeline("looped_bfs", 8, chunks);
    double passes = 0, send_f = 0, send_b = 0, head_b = 0, embed_b = 0;
    int sends_f = 0, sends_b = 0;
    for (const auto& op : r.ops) {
      const double t = op.end - op.start;
      if (op.device == DeviceRef{} && op.kind == OpKind::kernel &&
          (op.name.find(".fwd.") != std::string::npos || op.name.find(".bwd.") != std::string::npos))
        passes += t;
      if (op.name.rfind("pp.send_act.", 0) == 0)
        send_f += t, ++sends_f;
      if (op.name.rfind("pp.send_grad.", 0) == 0)
        send_b += t, ++sends_b;
      if (op.kind == OpKind::kernel && op.name.rfind("head.bwd.", 0) == 0)
        head_b += t;
      if (op.kind == OpKind::kernel && op.name.rfind("embed.bwd.", 0) == 0)
        embed_b += t;
    }
    REQUIRE(sends_f > 0);
    REQUIRE(sends_b > 0);
    REQUIRE(head_b > 0);
    const double slots = 8.0 * chunks, per_slot = passes / slots;
    const double pace    = std::max(0.0, head_b - (chunks == 1 ? embed_b : 0.0));
    const double by_hand = (3 * (per_slot + send_f / sends_f + send_b / sends_b) + pace) / passes;
    INFO("v " << chunks << ": (P-1)/(v m) " << 3 / slots << ", by hand " << by_hand);
    CHECK(step_breakdown(r).pipeline_bubble / passes == Approx(by_hand).epsilon(0.01));
  }
}

TEST_CASE("looped_bfs_holds_every_micro_batchs_activations_as_gpipe_does", "[pp][memory]")
{
  // At the end of its forwards the first stage holds m micro-batches of both its chunks:
  // its 2 layers' activations m times, as GPipe holds them (Korthikanti et al. 2022,
  // §4.2.3); 1F1B holds P = 4 of the m = 8.
  const double gpipe = first_stage_activations(bfs_pipeline("gpipe", 8, 1));
  CHECK(first_stage_activations(bfs_pipeline("looped_bfs", 8, 2)) == Approx(gpipe).epsilon(0.01));
  CHECK(first_stage_activations(bfs_pipeline("1f1b", 8, 1)) == Approx(gpipe / 2).epsilon(0.01));
}

TEST_CASE("virtual_stages_on_a_one_chunk_schedule_name_every_schedule_that_runs_chunks", "[errors][layout]")
{
  const std::string line = test::refused("bfs_virtual_1f1b", "hardware: {node: dgx-a100, gpus_per_node: 4}\n"
                                                             "model: {preset: gpt2}\n"
                                                             "training: {seq_len: 256, global_batch: 8, micro_batch: 1,"
                                                             " pp: 2, dp: 2, virtual_stages: 2}\n");
  CHECK_THAT(line, Catch::Contains("training.virtual_stages") &&
                       Catch::Contains("needs pipeline_schedule: interleaved or looped_bfs"));
}

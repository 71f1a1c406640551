// The memory floor `memwall optimize` prunes with must never prune a layout that fits:
// over every k-th layout of small jobs on GPUs made small enough that floors straddle
// their memory, every replay peaks at or above the floor, and a layout whose floor
// exceeds the GPU's memory does not fit when replayed. And a hand calculation: GPT-3
// 175B's model states alone cannot fit on one DGX A100.
#include "analysis/StepReport.hpp"
#include "app/optimize/LayoutSearch.hpp"
#include "app/optimize/MemoryFloor.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace memwall;
using namespace memwall::test;

namespace {

struct FloorCheck {
  int replayed = 0, fit = 0, pruned = 0;
};

// Replays every `stride`-th valid layout of `yaml` on `gpus` GPUs and checks the floor
// against each replay.
FloorCheck check_floor(const std::string& yaml, int64_t gpus, int stride, const std::vector<std::string>& axes = {})
{
  ExperimentSpec job = parse_spec(yaml, "job.yaml", ".");
  SearchSpace space{job, gpus, job.cluster.gpus_per_node};
  FloorCheck c;
  int n = 0;
  for (const PartialLayout& l : enumerate_layouts(space, parse_axis_options(axes))) {
    std::vector<std::string> overrides;
    for (const auto& [k, v] : l.settings)
      overrides.push_back(k + "=" + v);
    ExperimentSpec spec;
    try {
      spec = parse_spec(yaml, "job.yaml", ".", overrides);
    } catch (const std::exception&) {
      continue; // invalid: never replayed by a search either
    }
    if (n++ % stride != 0)
      continue;
    double floor = model_state_floor_bytes(spec);
    RunResult r  = simulate(spec, /*in_child=*/true, {false, true, false, false});
    double peak  = 0;
    for (const PoolResult& p : r.pools)
      if (p.device.kind == DeviceKind::gpu)
        peak = std::max(peak, p.peak_bytes);
    ++c.replayed;
    INFO(spec.text << "\nfloor " << floor << " peak " << peak << " capacity " << spec.cluster.node.gpu.memory_bytes);
    // The replay goes on past a failed allocation, so its peak is what the layout
    // would need: never below the floor, fitting or not.
    CHECK(floor <= peak);
    c.fit += fits(r) ? 1 : 0;
    if (floor > spec.cluster.node.gpu.memory_bytes) {
      ++c.pruned;
      CHECK_FALSE(fits(r));
    }
  }
  return c;
}

} // namespace

TEST_CASE("the_floor_never_exceeds_a_fitting_replay_of_megatron_layouts", "[optimize][slow]")
{
  // GPT-2 medium (355M parameters: 5 GB of model states unsharded) on 8 A100s cut to 3 GB.
  FloorCheck c = check_floor("hardware: {node: dgx-a100, gpu: {preset: a100-sxm4-40gb, memory_bytes: 3e9}}\n"
                             "model: {preset: gpt2-medium}\n"
                             "training: {seq_len: 1024, global_batch: 32, micro_batch: 1}\n",
                             8, 9);
  CHECK(c.fit > 10);
  CHECK(c.pruned > 10); // the floors straddle the memory: the check has teeth both ways
}

TEST_CASE("the_floor_never_exceeds_a_fitting_replay_of_deepspeed_zero_and_offload", "[optimize][slow]")
{
  FloorCheck c = check_floor("hardware: {node: dgx-a100, gpus_per_node: 4, gpu: {preset: a100-sxm4-40gb, "
                             "memory_bytes: 2.5e9}}\nmodel: {preset: gpt2-medium}\n"
                             "training: {stack: deepspeed, seq_len: 1024, global_batch: 16, micro_batch: 1}\n",
                             4, 5, {"training.pp=1"});
  CHECK(c.fit > 5);
  CHECK(c.pruned > 5);
}

TEST_CASE("the_floor_never_exceeds_a_fitting_replay_of_expert_parallel_layouts", "[optimize][slow]")
{
  // 4 layers of 8 SwiGLU experts (h 512, inner 1024), top-2.
  FloorCheck c = check_floor("hardware: {node: dgx-h100, gpu: {preset: h100-sxm-80gb, memory_bytes: 1.0e9}}\n"
                             "model: {layers: 4, hidden: 512, heads: 8, vocab: 1024, max_seq_len: 4096, mlp: swiglu, "
                             "num_experts: 8, experts_per_token: 2, moe_ffn_hidden: 1024}\n"
                             "training: {seq_len: 4096, global_batch: 16, micro_batch: 1}\n",
                             8, 7);
  CHECK(c.fit > 5);
}

TEST_CASE("gpt3_175b_cannot_fit_one_dgx_a100_by_its_model_states_alone", "[optimize]")
{
  // By hand: 8 GPUs hold at best 1/8 of the 175B parameters each (tp x pp = 8, no
  // replica to shard over): 2 B of bf16 weights and 12 B of fp32 master weights and
  // Adam moments per parameter, 175e9 x 14 / 8 = 306 GB, over an A100's 80 GiB.
  write_file(temp_path("gpt3-one-node.yaml"), "hardware: {node: dgx-a100}\nmodel: {preset: gpt3-175b}\n"
                                              "training: {seq_len: 2048, global_batch: 64, micro_batch: 1}\n");
  OptimizeRequest request;
  request.spec_path = temp_path("gpt3-one-node.yaml");
  SearchPlan plan   = plan_search(request);
  CHECK(plan.enumerated > 100);
  CHECK(plan.invalid + plan.cannot_fit == plan.enumerated);
  CHECK(plan.cannot_fit > 0);
  CHECK(plan.sweep.points.empty());
  // The floor of the most sharded layout is the hand figure and a little more (the
  // embedding and head, the context), never less.
  ExperimentSpec spec = load_spec(request.spec_path, {"training.tp=8", "training.recompute=full"});
  double floor        = model_state_floor_bytes(spec);
  CHECK(floor > 175e9 * 14 / 8);
  CHECK(floor < 175e9 * 14 / 8 * 1.05);
}

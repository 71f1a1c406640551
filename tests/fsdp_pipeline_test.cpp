// FSDP2 on each pipeline stage, as torchtitan composes them (parallelize.py applies
// fully_shard to each stage's model chunk; torch.distributed.pipelining's schedules keep
// gradient sync off and the parameters unsharded until a chunk's last backward): each
// unit gathered once a step in bf16, its gradients summed unsharded in fp32 and
// reduce-scattered once. Counted by hand from Llama 3 8B's published shape.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

using namespace memwall;
using namespace memwall::test;

namespace {

// Llama 3 8B (Meta's config.json): h 4096, 32 layers, GQA 8 KV heads of 128, SwiGLU
// 14,336, vocabulary 128,256, untied. A layer: wq and wo h x h, wk and wv h x 1024, three
// MLP matrices h x 14,336, two norms of h.
constexpr double h = 4096, f = 14336, V = 128256;
constexpr double layer_params = 2 * h * h + 2 * h * 1024 + 3 * h * f + 2 * h;
// pp 2 splits the 32 layers 16 and 16: the embedding with the first stage, the final
// norm and the output layer with the last.
constexpr double stage0 = V * h + 16 * layer_params;
constexpr double stage1 = 16 * layer_params + h + V * h;

std::string spec(int pp, const std::string& more = "")
{
  return "hardware: {node: dgx-h100, nodes: 2}\nmodel: {preset: llama-3-8b}\n"
         "training: {stack: fsdp, pp: " +
         std::to_string(pp) + ", seq_len: 2048, global_batch: 32, micro_batch: 1" + more + "}\n";
}

struct StageSums {
  double gathered = 0, scattered = 0, weights = 0;
  int gathers = 0, scatters = 0;
};

// Keyed by node x 8 + GPU.
std::map<int, StageSums> sums_by_gpu(const OpDag& dag)
{
  std::map<int, StageSums> by;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op  = dag.op(id);
    StageSums& s  = by[op.device.node * 8 + op.device.index];
    const bool cl = op.kind == OpKind::collective;
    if (cl && op.collective == CollectiveKind::all_gather)
      s.gathered += op.bytes, ++s.gathers;
    if (cl && op.collective == CollectiveKind::reduce_scatter)
      s.scattered += op.bytes, ++s.scatters;
    if (op.kind == OpKind::alloc && op.category == MemCategory::weights)
      s.weights += op.bytes;
  }
  return by;
}

} // namespace

TEST_CASE("fsdp_on_pipeline_stages_gathers_each_unit_once_a_step_and_reduce_scatters_fp32_once", "[stack][fsdp][pp]")
{
  // 32 sequences over dp 8: 4 micro-batches a stage, yet each of the 17 units of a stage
  // (16 layers and the embedding, or the head) is all-gathered once (2 B a parameter)
  // and reduce-scattered once (4 B), where without stages every micro-batch gathers
  // twice and reduce-scatters once.
  auto by = sums_by_gpu(spec_workload(spec(2)));
  // dp 8 inside a node: stage 0 on node 0, stage 1 on node 1 (GPU 8 here).
  CHECK(by[0].gathered == Approx(2 * stage0).epsilon(1e-9));
  CHECK(by[8].gathered == Approx(2 * stage1).epsilon(1e-9));
  CHECK(by[0].scattered == Approx(4 * stage0).epsilon(1e-9));
  CHECK(by[8].scattered == Approx(4 * stage1).epsilon(1e-9));
  CHECK(by[0].gathers == 17);
  CHECK(by[0].scatters == 17);
  CHECK(by[8].gathers == 17);
  // The fp32 shard over dp 8.
  CHECK(by[0].weights == Approx(4 * stage0 / 8).epsilon(1e-9));
}

TEST_CASE("fsdp_on_pipeline_stages_holds_the_fp32_sums_to_the_chunks_end_and_makes_shards_only_there",
          "[stack][fsdp][pp]")
{
  // torch FSDP2's unsharded_accumulated_grad (reduce_dtype fp32 != param_dtype bf16):
  // every unit's 4 B a parameter from its first backward until its chunk's last backward
  // is done (torch.distributed.pipelining's REDUCE_GRAD right after it), when each unit
  // is reduce-scattered into a shard foreach_reduce makes then (zero_grad set them to
  // None) and its sum freed as its reduce-scatter ends. With 4 micro-batches every first
  // backward comes before any last one: all sums alive at once, and never all the
  // shards beside them.
  RunResult r = simulate(parse_spec(spec(2), "test.yaml", ""), true);
  std::map<int, double> grads;
  for (const PoolResult& p : r.pools)
    if (p.device.kind == DeviceKind::gpu)
      grads[p.device.node] = p.max_by_category[static_cast<size_t>(MemCategory::gradients)];
  CHECK(grads[0] >= 4 * stage0);
  CHECK(grads[0] < 4 * stage0 * (1 + 1.0 / 8));
  CHECK(grads[1] >= 4 * stage1);
  CHECK(grads[1] < 4 * stage1 * (1 + 1.0 / 8));
  // Every reduce-scatter of stage 0 after its last backward kernel; its 17 shards made
  // on the reduce-scatters' stream.
  OpDag dag        = spec_workload(spec(2));
  OpId last_bwd    = 0;
  OpId first_rs    = dag.size();
  int shards_comms = 0;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.device.node != 0 || op.device.index != 0)
      continue;
    const std::string n = op.name.str();
    if (op.kind == OpKind::kernel && n.find(".bwd.") != std::string::npos)
      last_bwd = id;
    if (op.kind == OpKind::collective && op.collective == CollectiveKind::reduce_scatter)
      first_rs = std::min(first_rs, id);
    if (op.kind == OpKind::alloc && n.find(".grad_shard") != std::string::npos && op.stream == StreamKind::comm)
      ++shards_comms;
  }
  CHECK(last_bwd < first_rs);
  CHECK(shards_comms == 17);
}

TEST_CASE("fsdp_on_pipeline_stages_prefetches_as_far_as_zero_prefetch_says", "[stack][fsdp][pp]")
{
  // Each unit's all-gather waits for the compute before the use it is issued at: with
  // zero_prefetch 0 every first forward waits for its own gather, with 1 the gather
  // runs beside the unit before it.
  auto step = [](int depth) {
    return simulate(parse_spec(spec(2, ", zero_prefetch: " + std::to_string(depth)), "test.yaml", ""), true).makespan_s;
  };
  CHECK(step(0) > step(1));
}

TEST_CASE("fsdp_without_stages_still_reduce_scatters_every_micro_batch", "[stack][fsdp][pp]")
{
  // torchtitan's gradient accumulation without pipeline stages leaves gradient sync on:
  // 2 micro-batches a rank (32 over dp 16), each all-gathering twice (forward and
  // backward, resharded after forward) and reduce-scattering once.
  const double P = stage0 + stage1;
  auto by        = sums_by_gpu(spec_workload(spec(1)));
  CHECK(by[0].gathered == Approx(2 * 2 * 2 * P).epsilon(1e-9));
  CHECK(by[0].scattered == Approx(2 * 4 * P).epsilon(1e-9));
}

TEST_CASE("fsdp_without_data_parallel_ranks_is_refused", "[stack][fsdp][pp][errors]")
{
  // torchtitan applies fully_shard only with dp_shard or cp > 1.
  const std::string yaml = "hardware: {node: dgx-h100, gpus_per_node: 2}\nmodel: {preset: llama-3-8b, layers: 4}\n"
                           "training: {stack: fsdp, pp: 2, seq_len: 256, global_batch: 4}\n";
  CHECK_THAT(refused("fsdp_pp_dp1", yaml), Catch::Contains("training.dp") && Catch::Contains("no FSDP"));
  // Nor without stages: tp 8 on 8 GPUs leaves one rank to shard over.
  CHECK_THAT(refused("fsdp_tp_dp1", "hardware: {node: dgx-h100}\nmodel: {preset: llama-3-8b, layers: 4}\n"
                                    "training: {stack: fsdp, tp: 8, sp: true, seq_len: 256, global_batch: 4}\n"),
             Catch::Contains("training.dp") && Catch::Contains("no FSDP"));
}

TEST_CASE("fsdp_runs_torchtitans_interleaved_schedule_with_the_loss_counted_in_the_split", "[stack][fsdp][pp]")
{
  // Llama 3 405B's layout in small: 2 chunks on each of 4 stages, the embedding and the
  // loss each counted as a layer (32 + 2 = 34 is not a multiple of 8: 30 + 2 = 32 is, so
  // 30 layers). Every chunk of every stage gathers once: the step runs to the end.
  const std::string more = ", pipeline_schedule: interleaved, virtual_stages: 2, "
                           "account_for_embedding_in_pipeline_split: true, account_for_loss_in_pipeline_split: true";
  std::string yaml       = spec(4, more);
  yaml.replace(yaml.find("{preset: llama-3-8b}"), 20, "{preset: llama-3-8b, layers: 30}");
  nlohmann::json j = run_json("fsdp_interleaved", yaml);
  CHECK(j["step_time_s"].get<double>() > 0);
  auto by = sums_by_gpu(spec_workload(yaml));
  // Stage 0: the embedding's chunk with 3 layers, and a chunk of 4: 8 units, 8 gathers.
  CHECK(by[0].gathers == 8);
  CHECK(by[0].scatters == 8);
}

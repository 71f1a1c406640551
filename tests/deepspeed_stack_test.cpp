// The `deepspeed` training stack: ZeRO-3 as DeepSpeed's stage3.py and
// partition_parameters.py gather parameters (tensor by tensor, small ones persistent,
// released by the reuse distance), what its 2021 per-parameter collectives cost the
// host, and the step against Megatron SC'21 Table 2's ZeRO-3 runs.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>

using namespace memwall;
using namespace memwall::test;

namespace {

// A GPT of 3 layers, hidden 128 on 2 GPUs, one micro-batch of 64 tokens: its weights
// (3h^2 = 49,152, h^2 = 16,384, 4h^2 = 65,536 elements) are above a persistence
// threshold of 1,000 and its biases and norms (at most 4h = 512) below.
constexpr double h = 128;
std::string tiny(const std::string& deepspeed)
{
  return "hardware: {node: dgx-a100, gpus_per_node: 2}\n"
         "model: {layers: 3, hidden: 128, heads: 4, ffn_hidden: 512, vocab: 1000, max_seq_len: 64}\n"
         "training: {stack: deepspeed, zero: 3, seq_len: 64, global_batch: 2, micro_batch: 1, recompute: full,\n"
         "  deepspeed: {stage3_param_persistence_threshold: 1000, " +
         deepspeed + "}}\n";
}

// All-gathers issued for each block ("L0", "embed"), from their names "L0.use3.t2.all_gather".
std::map<std::string, int> gathers_by_block(const OpDag& dag)
{
  std::map<std::string, int> n;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.kind == OpKind::collective && op.collective == CollectiveKind::all_gather)
      ++n[op.name.str().substr(0, op.name.str().find(".use"))];
  }
  return n;
}

} // namespace

TEST_CASE("a_megatron_deepspeed_gpt_layer_lists_its_twelve_parameter_tensors_in_forward_order", "[stack][deepspeed]")
{
  // GPT-3 175B's layer (h = 12288, tp 1): input LayerNorm (weight, bias), QKV (3h x h,
  // 3h), attention output (h x h, h), post-attention LayerNorm, h -> 4h (4h x h, 4h),
  // 4h -> h (h x 4h, h): 12 h^2 + 13 h elements.
  const double H = 12288;
  ModelSpec m    = model_preset("gpt3-175b");
  TrainingConfig cfg;
  cfg.stack = default_training_stack("deepspeed"), cfg.seq_len = 2048;
  BlockPlan b = default_training_stack("deepspeed")->layer(m, step_shape(cfg), 0);
  std::vector<double> expected{H, H, 3 * H * H, 3 * H, H * H, H, H, H, 4 * H * H, 4 * H, 4 * H * H, H};
  CHECK(b.tensors == expected);
  CHECK(b.params == Approx(12 * H * H + 13 * H).epsilon(1e-12));
}

TEST_CASE("transformers_modules_under_deepspeed_list_each_nn_parameter_and_cast_nothing", "[stack][deepspeed]")
{
  // Llama 3 8B's decoder layer: input_layernorm (h), q_proj (h x 4096), k_proj and
  // v_proj (h x 1024 each), o_proj, post_attention_layernorm, gate_proj, up_proj and
  // down_proj (h x 14336 each); GPT-2's: ln_1, c_attn, c_proj, ln_2, c_fc, c_proj with a
  // bias each. DeepSpeed's engine casts the model to bf16: no autocast casts.
  TrainingConfig cfg;
  cfg.seq_len = 1024;
  ParamReader training(YAML::Load("deepspeed: {modules: transformers}"), "test", "training");
  auto stack     = training_stack_registry().make("deepspeed", training);
  const double H = 4096, F = 14336;
  BlockPlan llama = stack->layer(model_preset("llama-3-8b"), step_shape(cfg), 2);
  std::vector<double> expected{H, H * H, H * 1024, H * 1024, H * H, H, H * F, H * F, F * H};
  CHECK(llama.tensors == expected);
  CHECK(llama.params == Approx(2.5 * H * H + 3 * H * F + 2 * H).epsilon(1e-12)); // q, k, v, o; the MLP; two norms
  for (const KernelPlan& k : llama.kernels)
    CHECK(k.name.find("cast") == std::string::npos);
  BlockPlan gpt2 = stack->layer(model_preset("gpt2"), step_shape(cfg), 0);
  const double G = 768;
  CHECK(gpt2.tensors == std::vector<double>{G, G, 3 * G * G, 3 * G, G * G, G, G, G, 4 * G * G, 4 * G, 4 * G * G, G});
  double sum = 0;
  for (double e : gpt2.tensors)
    sum += e;
  CHECK(sum == Approx(gpt2.params).epsilon(1e-12));
}

TEST_CASE("zero3_gathers_again_in_backward_only_what_the_reuse_distance_released", "[stack][deepspeed]")
{
  // The trace of gathered tensors (weights only; the rest persist), by hand, with
  // stage3_max_reuse_distance 200,000 elements:
  //   L0, L1  forward: all 4 gathered; their next use is the layer's recomputation, far
  //           away: released. Recompute: all 4 again. Then QKV is next used 18 h^2 =
  //           294,912 later (the other three recomputed and back again), the attention
  //           output 16 h^2: released and gathered a third time; 4h -> h and h -> 4h
  //           (8 h^2 = 131,072 and 0) stay: 4 + 4 + 2 = 10.
  //   L2      (last) forward to its recomputation is at most 11 h^2 = 180,224 away, the
  //           head holding nothing to gather: all 4 kept, none gathered to recompute;
  //           backward gathers QKV and the output again: 4 + 0 + 2 = 6.
  //   embed   the word and position tables, forward and again in backward: 4.
  OpDag dag = spec_workload(tiny("stage3_max_reuse_distance: 200000"));
  auto n    = gathers_by_block(dag);
  CHECK(n["L0"] == 10);
  CHECK(n["L1"] == 10);
  CHECK(n["L2"] == 6);
  CHECK(n["embed"] == 4);
  CHECK(n.count("head") == 0);
  // At DeepSpeed's default (10^9 elements) this model is never released: one gather
  // of each tensor, in forward.
  auto kept = gathers_by_block(spec_workload(tiny("stage3_max_reuse_distance: 1000000000")));
  CHECK(kept["L0"] == 4);
  CHECK(kept["L2"] == 4);
  CHECK(kept["embed"] == 2);
}

TEST_CASE("per_parameter_collectives_cost_the_host_a_view_and_a_copy_per_rank_and_call", "[stack][deepspeed]")
{
  // DeepSpeed 0.3's _allgather_param and _reduce_scatter_gradient build a list of one
  // view per rank (5.3 us each) and PyTorch copies each out of or into a flat buffer
  // (8.9 us to issue): 2 ranks x 14.2 us per call. Calls: the 30 gathers counted above,
  // and a reduce-scatter per tensor of the one micro-batch: embed 2 + 3 layers x 12 +
  // the final LayerNorm 2 = 40.
  OpDag dag   = spec_workload(tiny("stage3_max_reuse_distance: 200000, per_parameter_collectives: true"));
  double host = 0;
  for (OpId id = dag.first_id(); id < dag.size(); ++id)
    if (dag.op(id).kind == OpKind::host_compute)
      host += dag.op(id).seconds;
  CHECK(host == Approx(2 * 14.2e-6 * (30 + 40)).epsilon(1e-9));
}

TEST_CASE("a_reduce_bucket_smaller_than_a_gradient_reduces_each_gradient_alone", "[stack][deepspeed]")
{
  // DeepSpeed reduces its bucket before a gradient that would overflow it, then adds the
  // gradient: a bucket holds at least one whole tensor. reduce_bucket_size 1 asked for
  // one collective per element (tens of millions for a small model: minutes and all the
  // memory); it is one per tensor, 40 for the tiny GPT (embed 2 + 3 x 12 + final norm
  // 2). A bucket of 1e6 elements holds each block whole: one call per block, 5.
  auto reduce_scatters = [](const std::string& knobs) {
    OpDag dag = spec_workload(tiny(knobs));
    int n     = 0;
    for (OpId id = dag.first_id(); id < dag.size(); ++id)
      n += dag.op(id).kind == OpKind::collective && dag.op(id).collective == CollectiveKind::reduce_scatter;
    return n;
  };
  CHECK(reduce_scatters("reduce_bucket_size: 1") == 40);
  CHECK(reduce_scatters("reduce_bucket_size: 1000000") == 5);
}

TEST_CASE("zero3_holds_persistent_tensors_whole_and_shards_the_rest", "[stack][deepspeed]")
{
  // A layer's 12 h^2 weight elements over 2 ranks at 2 B, its 13 h biases and norms
  // whole at 2 B.
  OpDag dag = spec_workload(tiny(""));
  CHECK(op_sum(dag, "L0.weight_shard", OpKind::alloc, false) == Approx(12 * h * h * 2 / 2 + 13 * h * 2).epsilon(1e-12));
}

TEST_CASE("overlap_comm_moves_deepspeeds_gathers_off_the_compute_stream", "[stack][deepspeed]")
{
  auto streams = [](const OpDag& dag) {
    std::map<StreamKind, int> s;
    for (OpId id = dag.first_id(); id < dag.size(); ++id)
      if (dag.op(id).kind == OpKind::collective && dag.op(id).collective == CollectiveKind::all_gather)
        ++s[dag.op(id).stream];
    return s;
  };
  auto serial  = streams(spec_workload(tiny("overlap_comm: false")));
  auto overlap = streams(spec_workload(tiny("overlap_comm: true")));
  CHECK(serial.count(StreamKind::gather) == 0);
  CHECK(serial[StreamKind::compute] > 0);
  CHECK(overlap.count(StreamKind::compute) == 0);
  CHECK(overlap[StreamKind::gather] == serial[StreamKind::compute]);
}

TEST_CASE("zero3_at_scale_comes_within_15_percent_of_sc21_table_2_and_falls_with_scale",
          "[stack][deepspeed][validation]")
{
  // Narayanan et al., SC'21, Table 2: ZeRO-3 without model parallelism, the 174.6B GPT,
  // global batch 1536: 144, 88, 44 TFLOP/s per GPU at 384, 768, 1536 A100s, counted as
  // 96 B s l h^2 (1 + s / 6h + V / 16 l h) per step. memwall (VALIDATION.md): +3.5,
  // +9.6, -4.5 %.
  const double B = 1536, s = 2048, l = 96, H = 12288, V = 51200;
  const double flops = 96 * B * s * l * H * H * (1 + s / (6 * H) + V / (16 * l * H));
  double sum = 0, worst = 0, previous = 1e30;
  for (auto [gpus, published] : {std::pair{384, 144.0}, std::pair{768, 88.0}, std::pair{1536, 44.0}}) {
    std::string spec = "calibration/validation/deepspeed-zero3-175b-" + std::to_string(gpus) + ".yaml";
    RunResult r      = simulate(load_spec(source_path(spec)), true);
    double tflops    = flops / r.makespan_s / gpus / 1e12;
    INFO(spec << ": " << tflops << " TFLOP/s per GPU, published " << published);
    double error = std::fabs(tflops / published - 1);
    CHECK(tflops < previous);
    previous = tflops;
    sum += error;
    worst = std::max(worst, error);
  }
  CHECK(worst <= 0.30);
  CHECK(sum / 3 <= 0.15);
}

TEST_CASE("the_deepspeed_section_and_stack_refuse_what_they_do_not_run", "[stack][deepspeed][errors]")
{
  const std::string hw = "hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n";
  CHECK_THAT(
      refused("ds_megatron", hw + "training: {seq_len: 256, global_batch: 2, deepspeed: {overlap_comm: true}}\n"),
      Catch::Contains("training.deepspeed") && Catch::Contains("stack megatron"));
  CHECK_THAT(refused("ds_typo", hw + "training: {stack: deepspeed, seq_len: 256, global_batch: 2, "
                                     "deepspeed: {overlap_com: true}}\n"),
             Catch::Contains("overlap_com") && Catch::Contains("overlap_comm"));
  CHECK_THAT(refused("ds_moe", "hardware: {node: dgx-h100}\nmodel: {preset: mixtral-8x7b, layers: 2}\n"
                               "training: {stack: deepspeed, seq_len: 256, global_batch: 8}\n"),
             Catch::Contains("training.stack") && Catch::Contains("DeepSpeed-MoE"));
  CHECK_THAT(refused("ds_threshold", hw + "training: {stack: deepspeed, seq_len: 256, global_batch: 2, "
                                          "deepspeed: {reduce_bucket_size: 0}}\n"),
             Catch::Contains("reduce_bucket_size"));
}

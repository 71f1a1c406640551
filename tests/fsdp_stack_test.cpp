// The `fsdp` training stack (FSDP2 as torchtitan runs its Llama): what a layer keeps
// with and without torchtitan's per-op activation checkpointing, counted by hand from
// autograd; what FSDP moves (bf16 all-gathers, fp32 reduce-scatters) and holds (fp32
// shards); and the step against torchtitan's published runs on 64 A100s.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/SavedActivations.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace memwall;
using namespace memwall::test;

namespace {

// Llama 3 8B's shape at one sequence of 8,192 tokens.
constexpr double T = 8192, h = 4096, q = 4096, kv = 1024, f = 14336, heads = 32, c = 2;

BlockPlan titan_layer()
{
  TrainingConfig cfg;
  cfg.stack = default_training_stack("fsdp"), cfg.seq_len = 8192, cfg.micro_batch = 1, cfg.global_batch = 8,
  cfg.zero = 3;
  return default_training_stack("fsdp")->layer(model_preset("llama-3-8b"), step_shape(cfg), 3);
}

const std::string h100x8 = "hardware: {node: dgx-h100}\nmodel: {preset: llama-3-8b}\n";

} // namespace

TEST_CASE("a_titan_llama_layer_keeps_what_autograd_saves_by_hand", "[stack][fsdp]")
{
  // bf16 throughout (FSDP2's param_dtype), nothing cast. Autograd keeps: each fused
  // RMSNorm's fp32 rstd (2 x 4T); the two normed inputs, once each for wq/wk/wv and
  // w1/w3 (2 x Thc); SDPA's q, repeated k and v, output (4 x Tqc) and fp32 log-sum-exp
  // (4T x heads); SiLU's input, the product's two operands and w2's input (4 x Tfc);
  // the two residual sums, the next norms' inputs (2 x Thc). Rotary keeps only
  // freqs_cis, repeat_kv nothing.
  double expected = 2 * 4 * T + 2 * T * h * c + 4 * T * q * c + 4 * T * heads + 4 * T * f * c + 2 * T * h * c;
  double kept     = 0;
  for (const KernelPlan& k : titan_layer().kernels)
    kept += k.saved_bytes;
  CHECK(kept == Approx(expected).epsilon(1e-12));
}

TEST_CASE("torchtitans_per_op_checkpointing_keeps_the_input_and_every_other_matmuls_output", "[stack][fsdp]")
{
  // torchtitan's policy saves mm outputs except every second one (of wq, wk, wv, wo, w1,
  // w3, w2: wq, wv, w1, w2) and SDPA's output and log-sum-exp; the checkpoint keeps the
  // layer's input. Everything else is recomputed: the norms, rotary, repeat_kv, wk, wo,
  // w3, SiLU and the product.
  double expected       = T * h * c + T * q * c + T * kv * c + T * f * c + T * h * c + T * q * c + 4 * T * heads;
  double kept           = 0;
  int recomputed_gemms  = 0;
  const BlockPlan layer = titan_layer();
  REQUIRE(layer.layer);
  for (const KernelPlan& k : layer.kernels) {
    kept += SavedActivations(Recompute::selective).kept(layer, k);
    if (k.kclass == KernelClass::gemm && k.selective)
      ++recomputed_gemms;
  }
  CHECK(kept == Approx(expected).epsilon(1e-12));
  CHECK(recomputed_gemms == 3);
}

TEST_CASE("fsdp_gathers_bf16_parameters_twice_and_reduce_scatters_fp32_gradients_once", "[stack][fsdp]")
{
  // One micro-batch: each FSDP unit all-gathered before its forward and again before its
  // backward (resharded after forward) at 2 B a parameter, its gradients reduce-scattered
  // at 4 B; every rank holds 4 B of weights per parameter over dp. Llama 3 8B has
  // 8,030,261,248 parameters (Meta's release).
  const double P  = 8030261248.0;
  OpDag dag       = build_workload(parse_spec(h100x8 + "training: {stack: fsdp, seq_len: 2048, global_batch: 8, "
                                                             "micro_batch: 1}\n",
                                              "test.yaml", ""));
  double gathered = 0, scattered = 0, weights = 0;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.kind == OpKind::collective && op.collective == CollectiveKind::all_gather)
      gathered += op.bytes;
    if (op.kind == OpKind::collective && op.collective == CollectiveKind::reduce_scatter)
      scattered += op.bytes;
    if (op.kind == OpKind::alloc && op.category == MemCategory::weights)
      weights += op.bytes;
  }
  CHECK(gathered == Approx(2 * 2 * P).epsilon(1e-6));
  CHECK(scattered == Approx(4 * P).epsilon(1e-6));
  CHECK(weights == Approx(4 * P / 8).epsilon(1e-6));
}

TEST_CASE("torchtitans_published_64_a100_runs_come_within_8_percent_on_average", "[stack][fsdp][validation]")
{
  // torchtitan docs/performance.md, FSDP2 on 64 A100 80GB: tokens/s per GPU. Measured
  // by memwall with the runs' composite RMSNorm (VALIDATION.md, 2026-11-29): -8.2, -6.1,
  // -0.9 (Llama 2 13B without AC, timed as if it fit: memwall finds it 0.3 GiB over),
  // -1.0, +13.4 (Llama 2 70B at local batch 1 with per-op AC, which torchtitan runs no
  // faster than at batch 2 with full AC), -2.6 %: mean 5.4 %.
  struct Run {
    const char* spec;
    double published;
  };
  double sum = 0;
  int n      = 0;
  for (const Run& run : {Run{"torchtitan-llama3-8b-op", 2973}, Run{"torchtitan-llama3-70b-full", 331},
                         Run{"torchtitan-llama2-13b-none", 2162}, Run{"torchtitan-llama2-13b-op", 1904},
                         Run{"torchtitan-llama2-70b-op", 355}, Run{"torchtitan-llama2-70b-full", 353}}) {
    RunResult r    = simulate_validation(run.spec);
    double per_gpu = r.tokens_per_step / r.makespan_s / r.gpus;
    double error   = per_gpu / run.published - 1;
    INFO(run.spec << ": " << per_gpu << " tokens/s per GPU, published " << run.published);
    CHECK(std::fabs(error) <= 0.20);
    sum += std::fabs(error);
    ++n;
  }
  CHECK(sum / n <= 0.08);
}

TEST_CASE("llama_2_70b_with_per_op_checkpointing_fits_at_batch_1_and_not_at_2_as_torchtitan_found", "[stack][fsdp]")
{
  // torchtitan docs/performance.md, footnote 1: at local batch 2 with selective AC the
  // 70B run is out of memory on 64 A100 80GB; at local batch 1 it runs.
  auto fits = [](const char* spec) {
    RunResult r = simulate_validation(spec);
    for (const PoolResult& p : r.pools)
      if (p.oom_count > 0)
        return false;
    return true;
  };
  CHECK(fits("torchtitan-llama2-70b-op"));
  CHECK_FALSE(fits("torchtitan-llama2-70b-op-bs2"));
}

TEST_CASE("the_fsdp_stack_refuses_what_torchtitans_fsdp_path_does_not_run", "[stack][fsdp][errors]")
{
  const std::string t = "training: {stack: fsdp, seq_len: 2048, global_batch: 8, ";
  CHECK_THAT(refused("fsdp_zero", h100x8 + t + "zero: 1}\n"),
             Catch::Contains("training.zero") && Catch::Contains("zero 3"));
  CHECK_THAT(refused("fsdp_fp16", h100x8 + t + "precision: fp16}\n"), Catch::Contains("training.precision"));
  CHECK_THAT(refused("fsdp_gpt2", "hardware: {node: dgx-h100}\nmodel: {preset: gpt2}\n"
                                  "training: {stack: fsdp, seq_len: 1024, global_batch: 8}\n"),
             Catch::Contains("training.stack") && Catch::Contains("Llama 3"));
}

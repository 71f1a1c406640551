// The `pytorch` stack's GPT-2 (transformers' modeling_gpt2.py in eager PyTorch under
// bf16 autocast): what one GPT2Block launches and keeps, counted by hand from autograd,
// and against the GPT-2 step measured on an H200 (torch 2.11, transformers 5.17:
// calibration/data/measured/h200/hf-family-kernels.csv; research/hf-gpt2-inventory.md).
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <sstream>

using namespace memwall;

namespace {

StepShape shape_8x1024()
{
  TrainingConfig cfg;
  cfg.stack = default_training_stack("pytorch"), cfg.seq_len = 1024, cfg.micro_batch = 8, cfg.global_batch = 8,
  cfg.precision = Dtype::bf16;
  return step_shape(cfg);
}

BlockPlan gpt2_block() { return default_training_stack("pytorch")->layer(model_preset("gpt2"), shape_8x1024(), 3); }

} // namespace

TEST_CASE("a_gpt2_block_launches_the_kernels_autograd_runs_for_it", "[stack][pytorch][gpt2]")
{
  // Forward by hand: ln_1 (one fused kernel); c_attn = addmm under autocast: bias, weight
  // and input cast, one GEMM; SDPA on q, k, v (views of c_attn's bf16 output, no casts;
  // the output already in [b, s, h, d] layout, so no copy); c_proj: bias and weight
  // cast, GEMM; dropout; the residual add; ln_2; c_fc (3 casts, GEMM); gelu_new's 9
  // (0.5*x, x cast to fp32 for pow, which autocast runs in fp32, pow, *0.044715, +x,
  // *sqrt(2/pi), tanh, +1, the product, fp32); c_proj (3 casts: its input is fp32, GEMM);
  // dropout; the add; the DynamicCache's cats of k and v (2): 28 memory-bound kernels, 4
  // GEMMs, 1 attention.
  // Backward: each residual add's gradient cast to bf16 (2), dropout (2), each Conv1D's
  // weight-gradient cast, bias-gradient sum and its cast (4 x 3) and the input-gradient
  // casts of c_fc, c_attn and c_proj (3); gelu_new's 14 (two product rules and one cast
  // back, tanh, two scalings, the add's cast back, pow's three and its cast back, 0.5 x,
  // two sums of x's gradients); each LayerNorm's input and weight/bias kernels (2 x 2);
  // the two sums of the stream's gradient (2); SDPA's dO.O and dq conversion (2); dk and
  // dv cloned back (2); q, k and v's gradients catted (1): 44, with 4 x 2 GEMMs.
  std::map<KernelClass, int> fwd, bwd;
  for (const KernelPlan& k : gpt2_block().kernels) {
    if (k.runs(true))
      fwd[k.kclass]++;
    if (k.runs(false) && !k.accumulates)
      bwd[k.kclass] += k.kclass == KernelClass::gemm ? 2 : 1;
  }
  CHECK(fwd[KernelClass::gemm] == 4);
  CHECK(fwd[KernelClass::attention] == 1);
  CHECK(fwd[KernelClass::elementwise] == 28);
  CHECK(bwd[KernelClass::gemm] == 8);
  CHECK(bwd[KernelClass::attention] == 1);
  CHECK(bwd[KernelClass::elementwise] == 44);
}

TEST_CASE("a_gpt2_block_keeps_what_autograd_saves_by_hand", "[stack][pytorch][gpt2]")
{
  // T = 8192 tokens, h = 768, f = 3072, 12 heads. Autograd keeps: each LayerNorm's fp32
  // mean and rstd (2 x 8T); c_attn's bf16 input (2Th); its output, which holds q, k and
  // v (6Th); the DynamicCache's copies of k and v that SDPA reads (2 x 2Th); SDPA's
  // output (2Th, c_proj's input too) and fp32 log-sum-exp (4T x heads); two dropout masks
  // (2 x Th, one byte); the two fp32 residual sums (2 x 4Th, the next LayerNorms'
  // inputs); c_fc's bf16 input (2Th); gelu_new's fp32 x (pow's input), tanh and 1 + tanh
  // (3 x 4Tf) and bf16 0.5 x (2Tf); c_proj's bf16 copy of gelu_new's fp32 output (2Tf);
  // autocast's bf16 weights (2 (3h^2 + h^2 + 2hf)).
  const double T = 8192, h = 768, f = 3072, heads = 12;
  const double activations = 16 * T + 2 * T * h + 6 * T * h + 4 * T * h + 2 * T * h + 4 * T * heads + 2 * T * h +
                             8 * T * h + 2 * T * h + 14 * T * f + 2 * T * f;
  const double weights = 2 * (4 * h * h + 2 * h * f);
  double kept = 0, kept_weights = 0;
  for (const KernelPlan& k : gpt2_block().kernels) {
    kept += k.saved_bytes;
    if (k.saved_category == MemCategory::weights)
      kept_weights += k.saved_bytes;
  }
  CHECK(kept_weights == Approx(weights).epsilon(1e-12));
  CHECK(kept - kept_weights == Approx(activations).epsilon(1e-12));
}

TEST_CASE("a_second_micro_batch_adds_its_gradients_into_the_first_at_12_bytes_a_parameter", "[stack][pytorch][gpt2]")
{
  // AccumulateGrad: the first micro-batch's fp32 gradients become .grad; each later one
  // is added in place (read .grad and the new gradient, write .grad: 3 x 4 B) for every
  // parameter, the tied token table through lm_head's. GPT-2 small has 124,439,808
  // parameters (the HF checkpoint); two micro-batches move 12 B x that more in backward
  // than twice one.
  auto backward_bytes = [](int micro_batches) {
    std::string yaml = "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                       "training: {stack: pytorch, seq_len: 1024, micro_batch: 4, global_batch: " +
                       std::to_string(4 * micro_batches) + "}\n";
    OpDag dag    = build_workload(parse_spec(yaml, "test.yaml", ""));
    double bytes = 0;
    for (OpId id = dag.first_id(); id < dag.size(); ++id)
      if (dag.op(id).kind == OpKind::kernel && dag.op(id).phase == StepPhase::backward)
        bytes += dag.op(id).bytes;
    return bytes;
  };
  CHECK(backward_bytes(2) - 2 * backward_bytes(1) == Approx(12.0 * 124439808).epsilon(1e-6));
}

TEST_CASE("ddp_holds_its_buckets_beside_the_gradients_and_copies_each_gradient_in_and_back", "[stack][pytorch][gpt2]")
{
  // torch's DDP with gradient_as_bucket_view=False (the default): flat fp32 buckets as
  // large as the gradients (4 B a parameter, held for the run), each gradient written into
  // its bucket scaled by 1/dp before the all-reduce and copied back after it (read and
  // write 4 B each way): 16 B a parameter of copies. GPT-2 small: 124,439,808 parameters.
  std::string yaml = "hardware: {node: dgx-h100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                     "training: {stack: pytorch, seq_len: 1024, micro_batch: 4, global_batch: 8}\n";
  OpDag dag        = build_workload(parse_spec(yaml, "test.yaml", ""));
  double buckets = 0, copies = 0;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.kind == OpKind::alloc && op.name.str().find(".ddp_bucket") != std::string::npos)
      buckets += op.bytes;
    if (op.kind == OpKind::kernel && op.name.str().find("ddp") != std::string::npos)
      copies += op.bytes;
  }
  CHECK(buckets == Approx(4.0 * 124439808).epsilon(1e-6));
  CHECK(copies == Approx(16.0 * 124439808).epsilon(1e-6));
}

TEST_CASE("a_gpt2_step_cats_and_clones_the_dynamic_caches_k_and_v_as_the_measured_h200_step_did",
          "[stack][pytorch][gpt2]")
{
  // The measured step (12 layers): CatArrayBatchedCopy<OpaqueType<2>, unsigned, 4, 64, 64>
  // (the cache's cat of a [4, 12, 1024, 64] k or v onto an empty tensor) 24 times, and
  // 24 bf16 direct copies (CatBackward's dk and dv back into c_attn's layout).
  const memwall::test::CacheKernels measured = memwall::test::measured_cache_kernels("gpt2");
  const memwall::test::CacheKernels planned  = memwall::test::planned_cache_kernels(gpt2_block());
  CHECK(12 * planned.cats == measured.cats);
  CHECK(12 * planned.clones == measured.clones);
  CHECK(measured.cats == 24);
}

TEST_CASE("gpt2_small_medium_and_xl_peak_within_2_percent_of_the_measured_h200_steps", "[stack][pytorch][gpt2]")
{
  // calibration/data/measured/h200/hf-families.csv: one training step of each on an H200,
  // micro-batch 4 x 1,024, fp32 parameters under bf16 autocast, sdpa, fused AdamW; torch's
  // max_memory_allocated (no CUDA context, which memwall's peak holds apart).
  const auto measured = memwall::test::measured_family_steps();
  for (const char* preset : {"gpt2", "gpt2-medium", "gpt2-xl"}) {
    REQUIRE(measured.count(preset) == 1);
    nlohmann::json j = memwall::test::run_json(
        std::string("gpt2_peak_") + preset,
        std::string("hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {preset: ") + preset +
            "}\ntraining: {stack: pytorch, seq_len: 1024, micro_batch: 4, global_batch: 4, optimizer: adamw}\n");
    INFO(preset);
    CHECK(memwall::test::peak_without_context(j) == Approx(measured.at(preset).peak_allocated_bytes).epsilon(0.02));
  }
}

TEST_CASE("gpt2_under_gradient_checkpointing_builds_no_dynamic_cache", "[stack][pytorch][gpt2]")
{
  // GPT2Model.forward: with gradient checkpointing in training, use_cache is set to False
  // ("`use_cache=True` is incompatible with gradient checkpointing"): no cache cats, no
  // clones of dk and dv, and SDPA keeps views of c_attn's output only.
  TrainingConfig cfg;
  cfg.stack = default_training_stack("pytorch"), cfg.seq_len = 1024, cfg.micro_batch = 8, cfg.global_batch = 8,
  cfg.precision = Dtype::bf16, cfg.recompute = Recompute::full;
  BlockPlan b   = default_training_stack("pytorch")->layer(model_preset("gpt2"), step_shape(cfg), 3);
  int cache_ops = 0;
  for (const KernelPlan& k : b.kernels)
    cache_ops += k.name.find("cache_cat") != std::string::npos || k.name.find("clone_d") != std::string::npos;
  CHECK(cache_ops == 0);
}

TEST_CASE("gpt2s_backward_under_autocast_holds_gelu_new_s_fp32_gradients", "[stack][pytorch][gpt2]")
{
  // gelu_new's backward under autocast, at its product rule: the fp32 output gradient, the
  // fp32 gradients of 0.5 x (before its cast back) and of 1 + tanh, and that cast in bf16
  // (3 x 4Tf + 2Tf), beside the residual stream's two fp32 gradients (2 x 4Th).
  // T = 8192, f = 3072, h = 768.
  const double T = 8192, h = 768, f = 3072;
  CHECK(gpt2_block().backward_workspace == Approx(14 * T * f + 2 * T * h * 4).epsilon(1e-12));
}

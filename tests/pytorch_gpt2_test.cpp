// The `pytorch` stack's GPT-2 (transformers' modeling_gpt2.py in eager PyTorch under
// bf16 autocast): what one GPT2Block launches and keeps, counted by hand from autograd.
// No recorded GPT-2 step exists to compare against; the Llama blocks, built from the
// same modules, are checked against a real H100 trace in pytorch_stack_test.cpp.
#include "sim/Simulation.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <map>

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
  // cast, GEMM; dropout; the residual add; ln_2; c_fc (3 casts, GEMM); gelu_new's 8
  // (pow, *0.044715, +x, *sqrt(2/pi), tanh, +1, 0.5*x, the product); c_proj (2 casts,
  // GEMM); dropout; the add: 24 memory-bound kernels, 4 GEMMs, 1 attention.
  // Backward: each residual add's gradient cast to bf16 (2), dropout (2), each Conv1D's
  // weight-gradient cast, bias-gradient sum and its cast (4 x 3) and the input-gradient
  // casts of c_fc and c_attn (2); gelu_new's 11 (two product rules, tanh, two scalings,
  // pow's three, 0.5 x, two sums of x's gradients); each LayerNorm's input and
  // weight/bias kernels (2 x 2); the two sums of the stream's gradient (2); SDPA's dO.O
  // and dq conversion (2); q, k and v's gradients catted (1): 38, with 4 x 2 GEMMs.
  std::map<KernelClass, int> fwd, bwd;
  for (const KernelPlan& k : gpt2_block().kernels) {
    if (k.runs(true))
      fwd[k.kclass]++;
    if (k.runs(false) && !k.accumulates)
      bwd[k.kclass] += k.kclass == KernelClass::gemm ? 2 : 1;
  }
  CHECK(fwd[KernelClass::gemm] == 4);
  CHECK(fwd[KernelClass::attention] == 1);
  CHECK(fwd[KernelClass::elementwise] == 24);
  CHECK(bwd[KernelClass::gemm] == 8);
  CHECK(bwd[KernelClass::attention] == 1);
  CHECK(bwd[KernelClass::elementwise] == 38);
}

TEST_CASE("a_gpt2_block_keeps_what_autograd_saves_by_hand", "[stack][pytorch][gpt2]")
{
  // T = 8192 tokens, h = 768, f = 3072, 12 heads. Autograd keeps: each LayerNorm's fp32
  // mean and rstd (2 x 8T); c_attn's bf16 input (2Th); its output, which holds q, k and
  // v (6Th); SDPA's output (2Th, c_proj's input too) and fp32 log-sum-exp (4T x heads);
  // two dropout masks (2 x Th, one byte); the two fp32 residual sums (2 x 4Th, the next
  // LayerNorms' inputs); c_fc's bf16 input (2Th); gelu_new's x, tanh, 0.5 x, 1 + tanh
  // and output (5 x 2Tf, the last c_proj's input); autocast's bf16 weights
  // (2 (3h^2 + h^2 + 2hf)).
  const double T = 8192, h = 768, f = 3072, heads = 12;
  const double activations =
      16 * T + 2 * T * h + 6 * T * h + 2 * T * h + 4 * T * heads + 2 * T * h + 8 * T * h + 2 * T * h + 10 * T * f;
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

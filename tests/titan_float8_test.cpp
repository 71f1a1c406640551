// torchtitan's Float8 training (training.fsdp.float8: torchao's Float8Linear, tensorwise
// dynamic scaling, under torch.compile): the GEMMs it runs in FP8, the casts and
// transposes around them and what autograd keeps, counted by hand; the step against
// torchtitan's Table 1 (docs/performance.md).
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/modelcode/TitanLlama.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace memwall;
using namespace memwall::test;

namespace {

// Llama 3 8B's shape at one sequence of 8,192 tokens, bf16 parameters, 32 query heads.
constexpr double T = 8192, h = 4096, q = 4096, kv = 1024, f = 14336, heads = 32, c = 2;
// The block's seven Linear weights: wq, wk, wv, wo, w1, w3, w2.
constexpr double W = h * (q + 2 * kv) + q * h + 3 * h * f;

BlockPlan layer(bool float8)
{
  hf::Precision p;
  p.param = p.compute = 2;
  return titan::layer(model_preset("llama-3-8b"), hf::Tokens{1, T}, p, 3, true, {}, {true, true, float8});
}

bool named(const KernelPlan& k, const char* part) { return k.name.find(part) != std::string::npos; }

} // namespace

TEST_CASE("float8_runs_a_titan_blocks_seven_linears_in_fp8_and_its_attention_in_bf16", "[stack][fsdp][float8]")
{
  int fp8 = 0, other = 0;
  for (const KernelPlan& k : layer(true).kernels) {
    if (k.kclass == KernelClass::gemm)
      (k.dtype == Dtype::fp8 ? fp8 : other) += 1;
    if (k.kclass == KernelClass::attention)
      CHECK(k.dtype == Dtype::bf16);
  }
  CHECK(fp8 == 7);
  CHECK(other == 0);
}

TEST_CASE("float8_casts_move_what_torchao_reads_and_writes_by_hand", "[stack][fsdp][float8]")
{
  // Forward: the normed x cast once for wq, wk, wv and once for w1, w3 (T h bf16 read,
  // T h FP8 written; amax in the norm's kernel); SDPA's output for wo with its amax read
  // again (2 T q c + T q); the product for w2 (T f c + T f); each weight's amax and cast
  // (2 W c + W).
  const double forward = 2 * (T * h * c + T * h) + (2 * T * q * c + T * q) + (T * f * c + T * f) + (2 * W * c + W);
  // Backward: each output gradient cast to e5m2 in two layouts (T out c + 2 T out), w2's
  // with its amax read again (it comes from the next block's graph); the four FP8 inputs
  // and the seven FP8 weights transposed (read and written, 1 byte each).
  const double grads = (T * q * c + 2 * T * q) + 2 * (T * kv * c + 2 * T * kv) + (T * h * c + 2 * T * h) +
                       2 * (T * f * c + 2 * T * f) + (2 * T * h * c + 2 * T * h);
  const double backward = grads + 2 * (T * h + T * q + T * h + T * f) + 2 * W;
  double fwd = 0, bwd = 0;
  for (const KernelPlan& k : layer(true).kernels)
    if (named(k, "to_float8") || named(k, "float8_transpose"))
      fwd += k.fwd_bytes, bwd += k.bwd_bytes;
  CHECK(fwd == Approx(forward).epsilon(1e-12));
  CHECK(bwd == Approx(backward).epsilon(1e-12));
}

TEST_CASE("float8_keeps_fp8_inputs_and_weights_for_backward_in_place_of_bf16_inputs", "[stack][fsdp][float8]")
{
  // Without checkpointing the compiled bf16 block keeps: the norms' rstd (2 x 4T) and the
  // residual sum h (Thc); wq's and w1's normed inputs (2 Thc); SDPA's q, repeated k and
  // v, output (4 Tqc) and log-sum-exp (4 T heads); SiLU-times-w3's two inputs (2 Tfc) and
  // w2's input (Tfc); the block's output sum (Thc).
  const double bf16 = 8 * T + T * h * c + 2 * T * h * c + 4 * T * q * c + 4 * T * heads + 3 * T * f * c + T * h * c;
  // Float8Linear's autograd function keeps its FP8 input and weight instead: the bf16
  // inputs of wq, w1 and w2 go, the four FP8 inputs and seven FP8 weights come.
  const double float8 = bf16 - 2 * T * h * c - T * f * c + (2 * T * h + T * q + T * f) + W;
  double kept_bf16 = 0, kept_float8 = 0;
  for (const KernelPlan& k : layer(false).kernels)
    kept_bf16 += k.saved_bytes;
  for (const KernelPlan& k : layer(true).kernels)
    kept_float8 += k.saved_bytes;
  CHECK(kept_bf16 == Approx(bf16).epsilon(1e-12));
  CHECK(kept_float8 == Approx(float8).epsilon(1e-12));
}

TEST_CASE("float8_speeds_torchtitans_compiled_8b_step_as_table_1_measured_within_5_percent", "[stack][fsdp][float8]")
{
  // torchtitan docs/performance.md Table 1 (Llama 3.1 8B, 8 H100 at 500 W, FSDP 8, local
  // batch 2, per-op AC, torch.compile): 6,667 tokens/s per GPU, 8,532 with Float8:
  // x1.280. memwall: x1.224 (2026-11-29).
  const double speedup = validation_speedup("torchtitan-llama3-8b-h100-float8", "torchtitan-llama3-8b-h100-compile");
  INFO("speedup x" << speedup);
  CHECK(speedup > 1.15);
  CHECK(speedup == Approx(8532.0 / 6667.0).epsilon(0.05));
}

TEST_CASE("float8_and_async_tp_are_refused_where_torchtitan_or_memwall_does_not_run_them",
          "[stack][fsdp][float8][errors]")
{
  const std::string spec = "hardware: {node: dgx-h100}\nmodel: {preset: llama-3-8b}\n"
                           "training: {stack: fsdp, seq_len: 2048, global_batch: 8, ";
  CHECK_THAT(refused("float8_eager", spec + "fsdp: {float8: tensorwise}}\n"),
             Catch::Contains("training.fsdp") && Catch::Contains("compile: true"));
  CHECK_THAT(refused("float8_rowwise", spec + "fsdp: {compile: true, float8: rowwise}}\n"),
             Catch::Contains("training.fsdp.float8") && Catch::Contains("tensorwise"));
  CHECK_THAT(refused("async_tp_eager", spec + "tp: 2, sp: true, fsdp: {async_tp: true}}\n"),
             Catch::Contains("async_tp") && Catch::Contains("compile: true"));
  CHECK_THAT(refused("async_tp_no_tp", spec + "fsdp: {compile: true, async_tp: true}}\n"),
             Catch::Contains("async_tp") && Catch::Contains("tp > 1"));
}

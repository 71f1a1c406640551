// torchtitan's `fsdp` stack under torch.compile (training.fsdp.compile) and across
// PyTorch releases (training.fsdp.torch): the kernels Inductor leaves of a Llama layer,
// counted by hand from what each fused region reads and writes; eager RMSNorm before and
// after torch 2.9; and the step against torchtitan's Table 1 (docs/performance.md).
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/modelcode/TitanLlama.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace memwall;
using namespace memwall::test;

namespace {

// Llama 3 8B's shape at one sequence of 8,192 tokens, bf16 throughout (FSDP2's param_dtype).
constexpr double T = 8192, h = 4096, q = 4096, kv = 1024, f = 14336, c = 2;

BlockPlan layer(titan::Lowering lowering)
{
  hf::Precision p;
  p.param = p.compute = 2;
  return titan::layer(model_preset("llama-3-8b"), hf::Tokens{1, T}, p, 3, true, {}, lowering);
}

bool extern_kernel(const KernelPlan& k)
{
  // cuBLAS's matmuls and SDPA's flash kernel with its own helpers: Inductor calls them as they are.
  return k.kclass == KernelClass::gemm || k.name.rfind("attention.sdpa", 0) == 0;
}

struct Pointwise {
  int forward = 0, backward = 0;
  double forward_bytes = 0, backward_bytes = 0;
};

Pointwise pointwise(const BlockPlan& b)
{
  Pointwise p;
  for (const KernelPlan& k : b.kernels) {
    if (extern_kernel(k))
      continue;
    if (k.fwd_bytes > 0)
      ++p.forward, p.forward_bytes += k.fwd_bytes;
    if (k.bwd_bytes > 0)
      ++p.backward, p.backward_bytes += k.bwd_bytes;
  }
  return p;
}

int kernels_named(const BlockPlan& b, const std::string& prefix)
{
  int n = 0;
  for (const KernelPlan& k : b.kernels)
    n += k.name.rfind(prefix, 0) == 0 && (k.fwd_bytes > 0 || k.bwd_bytes > 0);
  return n;
}

} // namespace

TEST_CASE("inductor_leaves_a_titan_layer_its_matmuls_sdpa_and_one_kernel_a_region", "[stack][fsdp][compile]")
{
  const Pointwise eager = pointwise(layer({false, true}));
  const Pointwise fused = pointwise(layer({true, true}));
  // Forward: the attention norm (x read, normed and the fp32 rstd written); rotary on q
  // and on k as three kernels each (Inductor falls back to ATen for the complex product:
  // the cast up, the product, the cast back), k's cast back writing it repeated to the
  // 32 query heads; v repeated; the attention's residual add with the FFN norm (x and the
  // branch read, h and normed written); SiLU times w3 (two read, one written); the FFN's
  // residual add.
  const double rotary_q = T * q * (c + 4) + 8 * T * q + T * q * (4 + c);
  const double rotary_k = T * kv * (c + 4) + 8 * T * kv + (4 * T * kv + T * q * c);
  const double forward  = (2 * T * h * c + h * c + 4 * T) + rotary_q + rotary_k + T * (kv + q) * c +
                         (4 * T * h * c + h * c + 4 * T) + 3 * T * f * c + 3 * T * h * c;
  CHECK(fused.forward == 11);
  CHECK(fused.forward_bytes == Approx(forward).epsilon(1e-12));
  // Backward: each norm's input gradient with the gradients summed into it (three of
  // wq, wk, wv; two of w1, w3) and the residual's, then its weight gradient from the same
  // inputs; rotary's three in reverse on q and on k (k's cast up summing its heads); v's
  // heads summed; SiLU-times-w3's two gradients from three inputs.
  const double backward = (6 * T * h * c + h * c) + (4 * T * h * c + 4 * h) + rotary_q +
                          (T * q * c + 4 * T * kv + 8 * T * kv + T * kv * (4 + c)) + T * (q + kv) * c +
                          (5 * T * h * c + h * c) + (3 * T * h * c + 4 * h) + 5 * T * f * c;
  CHECK(fused.backward == 12);
  CHECK(fused.backward_bytes == Approx(backward).epsilon(1e-12));
  // Eager moves more bytes each way (SiLU's output, the residual sums, k's repeat apart).
  CHECK(eager.forward > fused.forward);
  CHECK(eager.forward_bytes > fused.forward_bytes);
  CHECK(eager.backward_bytes > fused.backward_bytes);
}

TEST_CASE("inductor_keeps_the_matmuls_and_sdpa_as_eager_runs_them", "[stack][fsdp][compile]")
{
  const BlockPlan eager = layer({false, true}), fused = layer({true, true});
  double eager_flops = 0, fused_flops = 0;
  int eager_extern = 0, fused_extern = 0;
  for (const KernelPlan& k : eager.kernels)
    if (extern_kernel(k))
      eager_flops += k.fwd_flops + k.bwd_flops, ++eager_extern;
  for (const KernelPlan& k : fused.kernels)
    if (extern_kernel(k))
      fused_flops += k.fwd_flops + k.bwd_flops, ++fused_extern;
  CHECK(fused_extern == eager_extern);
  CHECK(fused_flops == Approx(eager_flops).epsilon(1e-12));
}

TEST_CASE("eager_rmsnorm_is_one_kernel_from_torch_2_9_and_its_composite_ops_before", "[stack][fsdp][compile]")
{
  // aten::_fused_rms_norm: one kernel forward, the input and weight gradients backward.
  CHECK(kernels_named(layer({false, true}), "attention_norm") == 3);
  // torchtitan's RMSNorm of 2024 (_norm(x.float()).type_as(x) * weight): to fp32, pow,
  // mean, + eps, rsqrt, x * rsqrt, back to bf16, * weight forward; backward the weight's
  // product, its gradient (product, memset, sum, accumulate), the cast up, twelve fp32
  // kernels through rsqrt, mean and pow, and the cast back.
  CHECK(kernels_named(layer({false, false}), "attention_norm") == 8 + 19);
  // Under compile the norm is Inductor's either way.
  CHECK(kernels_named(layer({true, false}), "attention_norm") == 3);
}

TEST_CASE("a_bf16_streams_rmsnorm_backward_runs_in_fp32_between_its_casts", "[stack][pytorch]")
{
  // LlamaRMSNorm on a bf16 stream (transformers, torchtitan's 2024 RMSNorm): autograd's
  // gradient is bf16 through the weight's product, cast up to fp32 (ToCopyBackward), fp32
  // through rsqrt, mean and pow for the fp32 copy of x (its two users' gradients added),
  // cast back to bf16, then added to the residual stream's gradient of x in bf16. Bytes by
  // hand, E = T x h:
  const double E = T * h, e = 2, w = 4;
  const double weight_part = (2 * E + h) * e + 3 * E * e + h * e + (E + h) * e + 3 * h * e;
  const double fp32_part =
      ((2 * E + T) + 3 * E + (E + T) + 2 * T + 2 * T + 3 * T + (E + T) + 2 * E + 2 * E + 3 * E + 3 * E) * w;
  const double casts = 2 * E * (e + w) + 3 * E * e;
  std::vector<KernelPlan> out;
  EagerOps ops(out);
  hf::Precision p;
  p.param = p.compute = 2;
  hf::rms_norm(ops, "norm", T, h, p);
  double backward = 0;
  for (const KernelPlan& k : out)
    backward += k.bwd_bytes;
  CHECK(backward == Approx(weight_part + fp32_part + casts).epsilon(1e-12));
}

TEST_CASE("torch_compile_speeds_torchtitans_8b_step_as_table_1_measured_within_5_percent", "[stack][fsdp][compile]")
{
  // torchtitan docs/performance.md Table 1 (Llama 3.1 8B, 8 H100 at 500 W, FSDP 8, local
  // batch 2, per-op AC; torch of 2024-12-23): 5,762 tokens/s per GPU eager, 6,667 with
  // torch.compile: x1.157. memwall: x1.163 (2026-11-29).
  const double speedup = validation_speedup("torchtitan-llama3-8b-h100-compile", "torchtitan-llama3-8b-h100");
  INFO("speedup x" << speedup);
  CHECK(speedup > 1.10);
  CHECK(speedup == Approx(6667.0 / 5762.0).epsilon(0.05));
}

TEST_CASE("the_fsdp_section_refuses_a_torch_it_does_not_know_and_another_stacks_spec", "[stack][fsdp][errors]")
{
  const std::string spec = "hardware: {node: dgx-h100}\nmodel: {preset: llama-3-8b}\n"
                           "training: {seq_len: 2048, global_batch: 8, ";
  CHECK_THAT(refused("fsdp_torch", spec + "stack: fsdp, fsdp: {torch: '3.0'}}\n"),
             Catch::Contains("training.fsdp.torch") && Catch::Contains("2.9"));
  CHECK_THAT(refused("fsdp_compile_type", spec + "stack: fsdp, fsdp: {compile: fast}}\n"),
             Catch::Contains("training.fsdp.compile"));
  CHECK_THAT(refused("fsdp_key", spec + "stack: fsdp, fsdp: {compiled: true}}\n"),
             Catch::Contains("training.fsdp.compiled"));
  CHECK_THAT(refused("fsdp_on_megatron", spec + "stack: megatron, fsdp: {compile: true}}\n"),
             Catch::Contains("training.fsdp"));
}

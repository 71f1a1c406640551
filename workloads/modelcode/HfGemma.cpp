// Gemma 2 and Gemma 3 (transformers' Gemma2ForCausalLM, Gemma3ForCausalLM) as Hugging Face
// runs them in eager PyTorch: Llama's decoder with four norms a layer (the attention's and
// the MLP's outputs normalised before their residual adds), Gemma's RMSNorm (computed in
// fp32 with the weight as 1 + w, the cast to the input's dtype last), GeGLU with
// gelu_pytorch_tanh (one kernel, as SiLU), the token embedding times sqrt(h), Gemma 3's
// q_norm and k_norm, and Gemma 2's final logit softcap. Under sdpa Gemma 2's attention
// softcap is dropped (transformers passes it in kwargs SDPA ignores). Gemma 3's sliding
// layers with a window shorter than the sequence take a bf16 (B, 1, S, S) bias built by
// where() and kept for cuDNN's backward. Kernel lists in forward order (EagerOps.hpp); the
// counts and bytes are calibration/research/hf-gemma-inventory.md's (71 kernels forward a
// Gemma 2 layer).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;
constexpr KernelFamily binary  = KernelFamily::residual;

} // namespace

void gemma_rms_norm(EagerOps& ops, const std::string& name, double rows, double h, double e, bool other_users,
                    bool frozen)
{
  const double E = rows * h, R = rows;
  const bool casts = e != 4; // a bf16 input (a branch's output, a head's q or k) is cast up first
  // _norm(x.float()) * (1.0 + weight.float()), then type_as(x).
  std::vector<EagerKernel> fwd;
  if (casts)
    fwd.push_back({name + ".to_fp32", E * (e + 4), 0, generic});
  for (const EagerKernel& k : std::vector<EagerKernel>{{name + ".pow", 8 * E, E, generic},
                                                       {name + ".mean", (E + R) * 4, E, generic},
                                                       {name + ".add_eps", 8 * R, R, generic},
                                                       {name + ".rsqrt", 8 * R, R, generic},
                                                       {name + ".mul_rsqrt", (2 * E + R) * 4, E, binary},
                                                       {name + ".one_plus_weight", 8 * h, h, generic},
                                                       {name + ".mul_weight", 8 * E + 4 * h, E, binary}})
    fwd.push_back(k);
  if (casts)
    fwd.push_back({name + ".type_as", E * (4 + e), 0, generic});
  // Backward as LlamaRMSNorm's in fp32 (the weight's product, x * rsqrt's, rsqrt's, mean's,
  // pow's), with the gradient cast up first and down last around a bf16 input.
  std::vector<EagerKernel> bwd;
  if (casts)
    bwd.push_back({name + ".bwd.to_fp32", E * (e + 4), 0, generic});
  // A frozen weight (PEFT): no weight gradient, so the normed input is not kept for it.
  bwd.push_back({name + ".bwd.mul_weight", (2 * E + h) * 4, E, binary});
  if (!frozen)
    for (const EagerKernel& k :
         std::vector<EagerKernel>{{name + ".bwd.mul_normed", 12 * E, E, binary},
                                  {name + ".bwd.memset", 4 * h, 0, generic},
                                  {name + ".bwd.sum_weight", (E + h) * 4, E, generic},
                                  {name + ".bwd.accumulate_weight_grad", 12 * h, h, binary, true}})
      bwd.push_back(k);
  for (const EagerKernel& k : std::vector<EagerKernel>{{name + ".bwd.mul_rsqrt", (2 * E + R) * 4, E, binary},
                                                       {name + ".bwd.mul_x", 12 * E, E, binary},
                                                       {name + ".bwd.sum_hidden", (E + R) * 4, E, generic},
                                                       {name + ".bwd.rsqrt_pow", 8 * R, R, generic},
                                                       {name + ".bwd.rsqrt_mul", 8 * R, R, generic},
                                                       {name + ".bwd.rsqrt_mul2", 12 * R, R, generic},
                                                       {name + ".bwd.mean_div", (E + R) * 4, E, generic},
                                                       {name + ".bwd.pow_copy", 8 * E, 0, generic},
                                                       {name + ".bwd.pow_mul2", 8 * E, E, generic},
                                                       {name + ".bwd.pow_mul", 12 * E, E, binary},
                                                       {name + ".bwd.add_x", 12 * E, E, binary}})
    bwd.push_back(k);
  if (casts)
    bwd.push_back({name + ".bwd.to_input_dtype", E * (4 + e), 0, generic});
  if (other_users) // the residual stream's gradient of x
    bwd.push_back({name + ".bwd.add", 3 * E * e, E, binary});
  // x * rsqrt and rsqrt in fp32; a bf16 input's fp32 copy too (x itself is its producer's).
  ops.op(fwd, bwd, (frozen ? 0.0 : 4 * E) + 4 * R + (casts ? 4 * E : 0.0));
}

void gemma_final_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p)
{
  gemma_rms_norm(ops, name, T, h, p.param, false, p.lora.enabled);
}

BlockPlan gemma_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double o = static_cast<double>(m.attn_out_dim()), c = p.compute, e = p.param;
  const double d = static_cast<double>(m.head_dim());
  // q's, k's, v's, gate's and up's outputs: fp32 under QLoRA (Linear4bit returns the fp32
  // stream's dtype), else c; so the head norms, rotary and the MLP's elementwise ops.
  const double a = projection_output_bytes(p, true);
  Precision rope = p;
  rope.compute   = a;
  BlockPlan b    = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  gemma_rms_norm(ops, "input_layernorm", T, h, e, true, p.lora.enabled);
  grad_accumulate(ops, "qkv.grad_sum_v", T * h, e);
  grad_accumulate(ops, "qkv.grad_sum_k", T * h, e);
  // attention_bias: q, k, v and o with biases (addmm).
  projection(ops, "self_attn.q_proj", T, h, q, true, m.qkv_bias, p);
  ops.op({}, {{"self_attn.q.bwd.grad_clone", 2 * T * q * a, 0, generic}});
  projection(ops, "self_attn.k_proj", T, h, kv, true, m.qkv_bias, p);
  projection(ops, "self_attn.v_proj", T, h, kv, true, m.qkv_bias, p);
  ops.op({}, {{"self_attn.v.bwd.grad_clone", 2 * T * kv * a, 0, generic}});
  if (m.qk_norm) { // Gemma 3: each head's q and k normalised, cast back to the projection's dtype
    gemma_rms_norm(ops, "self_attn.q_norm", T * static_cast<double>(m.heads), d, a, false, p.lora.enabled);
    gemma_rms_norm(ops, "self_attn.k_norm", T * static_cast<double>(m.kv_heads), d, a, false, p.lora.enabled);
  }
  rotary(ops, "self_attn.rope_q", T, q, rope);
  rotary(ops, "self_attn.rope_k", T, kv, rope);
  rotated_cache_update(ops, "self_attn", T, kv, p);
  if (m.windowed_layer(layer) && static_cast<double>(m.sliding_window) <= t.s) { // a mask unless S < window
    // The sliding-window mask as cuDNN's bias: where(mask, 0, -inf) into a bf16 (B, 1, S, S)
    // tensor, kept for the backward. (The kernel then runs without is_causal over all S^2
    // and with k and v expanded to every head: not modelled beyond the bias.)
    const double bias = t.b * t.s * t.s * c;
    ops.op({{"self_attn.mask_bias", bias + t.b * t.s * t.s, 0, generic}}, {}, bias);
  }
  sdpa(ops, "self_attn.sdpa", t, m, p, true);
  projection(ops, "self_attn.o_proj", T, o, h, false, m.proj_bias, p);
  gemma_rms_norm(ops, "post_attention_layernorm", T, h, c, false, p.lora.enabled);
  residual_add(ops, "attn.residual", T, h, p, rms_norm_reads_its_input(p));
  gemma_rms_norm(ops, "pre_feedforward_layernorm", T, h, e, true, p.lora.enabled);
  grad_accumulate(ops, "mlp.grad_sum", T * h, e);
  linear(ops, "mlp.gate_proj", T, h, f, true, p);
  // gelu_pytorch_tanh: one kernel each way, keeping its input; act * up keeps both and the
  // product (down_proj's input).
  ops.op({{"mlp.act", 2 * T * f * a, 8 * T * f, KernelFamily::activation}},
         {{"mlp.bwd.act", 3 * T * f * a, 16 * T * f, KernelFamily::activation}}, T * f * a);
  linear(ops, "mlp.up_proj", T, h, f, true, p);
  ops.op({{"mlp.mul", 3 * T * f * a, T * f, binary}},
         {{"mlp.bwd.mul_up", 3 * T * f * a, T * f, binary}, {"mlp.bwd.mul_act", 3 * T * f * a, T * f, binary}},
         3 * T * f * a);
  linear(ops, "mlp.down_proj", T, f, h, a != c, p); // QLoRA: Linear4bit casts the fp32 product
  gemma_rms_norm(ops, "post_feedforward_layernorm", T, h, a, false, p.lora.enabled);
  residual_add_of(ops, "mlp.residual", T, h, p.param, a, rms_norm_reads_its_input(p)); // the norm's output: a
  double heads_per_kv  = static_cast<double>(m.heads) / static_cast<double>(m.kv_heads);
  b.backward_workspace = std::max(3 * T * f * a + 2 * T * h * e + 4 * T * h,
                                  T * q * 4 + 2 * heads_per_kv * T * kv * c + 2 * T * h * e + 4 * T * h);
  return b;
}

} // namespace memwall::hf

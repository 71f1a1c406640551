// GPT-NeoX (transformers' GPTNeoXForCausalLM, modeling_gpt_neox.py: Pythia) as Hugging Face
// runs it in eager PyTorch: GPTNeoXLayer with use_parallel_residual computes
// x + attention(input_layernorm(x)) + mlp(post_attention_layernorm(x)) (else the two
// residual adds in turn); GPTNeoXAttention runs one query_key_value with a bias, views it
// as (B, S, H, 3D) and chunks q, k and v out of each head; apply_rotary_pos_emb rotates
// the first rotary_pct of each head's dims and cats the rest back on (the cat of an fp32
// and a bf16 part: two copies, an fp32 (B, H, S, D) result); SDPA's output comes back in
// that layout, so transpose(1, 2).contiguous() copies it; the MLP is dense_h_to_4h, exact
// GELU, dense_4h_to_h, all with biases. Kernel lists in forward order (EagerOps.hpp); the
// counts and bytes are calibration/research/hf-neox-phi3-qwen-inventory.md's (Pythia-1.4B
// on an H200: 40 kernels forward and 73 backward a layer).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>
#include <cmath>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;
constexpr KernelFamily binary  = KernelFamily::residual;

// Rotary embeddings on the first `r` of `width` dims of q or k, then the cat with the
// pass-through part: an fp32 copy of the rotated part, a cast of the bf16 rest into the
// fp32 result. Backward the rest's gradient cast back (strided), and the two slices'
// gradients into zeroed full-width buffers, summed.
void partial_rotary(EagerOps& ops, const std::string& name, double T, double width, double r, const Precision& p)
{
  const double E = T * width, R = T * r, c = p.compute;
  ops.op({}, {{name + ".bwd.slice_add", 3 * E * c, E, binary},
              {name + ".bwd.zeros_rot", E * c, 0, generic},
              {name + ".bwd.copy_rot", 2 * R * c, 0, generic},
              {name + ".bwd.zeros_pass", E * c, 0, generic},
              {name + ".bwd.copy_pass", 2 * (E - R) * c, 0, generic}});
  rotary(ops, name, T, r, p);
  ops.op({{name + ".cat_rot", 2 * R * p.param, 0, generic}, {name + ".cat_pass", (E - R) * (c + p.param), 0, generic}},
         {{name + ".bwd.cast_pass_grad", (E - R) * (c + p.param), 0, generic}});
}

} // namespace

BlockPlan neox_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double c = p.compute, e = p.param;
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double r = std::max(1.0, std::floor(static_cast<double>(m.head_dim()) * m.rotary_fraction)) *
                   static_cast<double>(m.heads); // rotated dims of q (and of k)
  BlockPlan b = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  // x's gradient: the stream's, plus each LayerNorm's (both read x under the parallel residual).
  grad_accumulate(ops, "input_layernorm.grad_sum", T * h, e);
  layer_norm(ops, "input_layernorm", T, h, p);
  addmm_linear(ops, "attention.query_key_value", T, h, q + 2 * kv, true, p);
  // The (B, S, H, 3D) view's gradient made contiguous, after chunk's backward cats q, k, v's.
  ops.op({}, {{"attention.qkv.bwd.clone", 2 * T * (q + 2 * kv) * c, 0, generic},
              {"attention.qkv.bwd.cat", 2 * T * (q + 2 * kv) * c, 0, generic}});
  partial_rotary(ops, "attention.rope_q", T, q, r, p);
  partial_rotary(ops, "attention.rope_k", T, kv, r, p);
  rotated_cache_update(ops, "attention", T, kv, p, false);
  sdpa(ops, "attention.sdpa", t, m, p, true);
  // transpose(1, 2).contiguous() of the (B, H, S, D) output: dense's input, kept.
  ops.op({{"attention.output_contiguous", 2 * T * q * c, 0, generic}}, {}, T * q * c);
  addmm_linear(ops, "attention.dense", T, q, h, false, p);
  if (!m.parallel_residual)
    residual_add(ops, "attention.residual", T, h, p, true);            // post_attention_layernorm reads it
  grad_accumulate(ops, "post_attention_layernorm.grad_sum", T * h, e); // its input's other user's gradient
  layer_norm(ops, "post_attention_layernorm", T, h, p);
  addmm_linear(ops, "mlp.dense_h_to_4h", T, h, f, true, p);
  // nn.GELU (exact, erf): one kernel each way in the compute dtype; keeps its input and
  // its output (dense_4h_to_h's input).
  ops.op({{"mlp.act", 2 * T * f * c, 8 * T * f, KernelFamily::activation}},
         {{"mlp.bwd.act", 3 * T * f * c, 16 * T * f, KernelFamily::activation}}, 2 * T * f * c);
  addmm_linear(ops, "mlp.dense_4h_to_h", T, f, h, false, p);
  if (m.parallel_residual) // mlp_output + attn_output in c, then + x in the stream's dtype
    ops.op({{"branch_sum", 3 * T * h * c, T * h, binary}}, {});
  residual_add(ops, "residual", T, h, p, true); // the next input_layernorm reads it
  // In backward: the MLP's two T x f gradients or the fused projection's three (its
  // gradient, chunk's cat, the clone), with the stream's two.
  b.backward_workspace = std::max(2 * T * f * c, 3 * T * (q + 2 * kv) * c) + 2 * T * h * e;
  return b;
}

} // namespace memwall::hf

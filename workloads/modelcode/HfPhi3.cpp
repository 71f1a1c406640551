// Phi-3 (transformers' Phi3ForCausalLM, modeling_phi3.py) as Hugging Face runs it in eager
// PyTorch: Llama's decoder with fused projections. Phi3Attention runs one qkv_proj and
// takes q, k and v as slices of its output; its rotary embedding is the partial one with a
// factor of 1 (q[..., :d] is q itself, the pass-through part empty but catted on, so q and
// k are copied once more, and their gradients get an empty slice's zeros); SDPA's output
// comes back in q's contiguous (B, H, S, D) layout, so transpose(1, 2).contiguous() copies
// it. Phi3MLP runs one gate_up_proj, chunks it and multiplies up by silu(gate). Kernel
// lists in forward order (EagerOps.hpp); the counts and bytes are
// calibration/research/hf-neox-phi3-qwen-inventory.md's, checked against the measured H200
// step of Phi-3-mini (45 kernels forward and 92 backward a layer).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;
constexpr KernelFamily binary  = KernelFamily::residual;

// apply_rotary_pos_emb with partial_rotary_factor 1: the rotation, then the cat with the
// empty pass-through slice (one strided copy of the fp32 result); backward the empty
// slice's zeros and their sum into the gradient.
void partial_rotary(EagerOps& ops, const std::string& name, double T, double width, const Precision& p)
{
  const double E = T * width;
  ops.op({}, {{name + ".bwd.pass_zeros", E * p.compute, 0, generic},
              {name + ".bwd.pass_add", 3 * E * p.compute, E, binary}});
  rotary(ops, name, T, width, p);
  ops.op({{name + ".cat_pass", 2 * E * p.param, 0, generic}}, {});
}

} // namespace

BlockPlan phi3_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double o = static_cast<double>(m.attn_out_dim()), c = p.compute, e = p.param;
  const double W = q + 2 * kv; // qkv_proj's output
  // qkv_proj's and gate_up_proj's outputs: fp32 under QLoRA (Linear4bit returns the fp32
  // stream's dtype), else c; rotary then in fp32 throughout.
  const double a = projection_output_bytes(p, true);
  Precision rope = p;
  rope.compute   = a;
  BlockPlan b    = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  rms_norm(ops, "input_layernorm", T, h, p);
  linear(ops, "self_attn.qkv_proj", T, h, W, true, p);
  // The three slices' gradients: each into a zeroed T x W buffer, the three summed.
  ops.op({}, {{"self_attn.qkv.bwd.zeros_v", T * W * a, 0, generic},
              {"self_attn.qkv.bwd.copy_v", 2 * T * kv * a, 0, generic},
              {"self_attn.qkv.bwd.zeros_k", T * W * a, 0, generic},
              {"self_attn.qkv.bwd.copy_k", 2 * T * kv * a, 0, generic},
              {"self_attn.qkv.bwd.add_slices", 3 * T * W * a, T * W, binary},
              {"self_attn.qkv.bwd.zeros_q", T * W * a, 0, generic},
              {"self_attn.qkv.bwd.copy_q", 2 * T * q * a, 0, generic},
              {"self_attn.qkv.bwd.add_slices2", 3 * T * W * a, T * W, binary}});
  // The views' gradients made contiguous for the slices (dv's: the cache's clone).
  ops.op({}, {{"self_attn.k.bwd.grad_clone", 2 * T * kv * a, 0, generic},
              {"self_attn.q.bwd.grad_clone", 2 * T * q * a, 0, generic}});
  partial_rotary(ops, "self_attn.rope_q", T, q, rope);
  partial_rotary(ops, "self_attn.rope_k", T, kv, rope);
  rotated_cache_update(ops, "self_attn", T, kv, p);
  sdpa(ops, "self_attn.sdpa", t, m, p, true);
  // transpose(1, 2).contiguous() of the (B, H, S, D) output: o_proj's input, kept.
  ops.op({{"self_attn.output_contiguous", 2 * T * o * c, 0, generic}}, {}, T * o * c);
  linear(ops, "self_attn.o_proj", T, o, h, false, p);
  residual_add(ops, "attn.residual", T, h, p, rms_norm_reads_its_input(p));
  rms_norm(ops, "post_attention_layernorm", T, h, p);
  linear(ops, "mlp.gate_up_proj", T, h, 2 * f, true, p);
  // chunk(2)'s backward cats the two halves' gradients.
  ops.op({}, {{"mlp.chunk.bwd.cat", 4 * T * f * a, 0, generic}});
  // silu(gate) keeps the gate view (gate_up's whole output stays alive) and up * act keeps
  // its output; the product is down_proj's input.
  ops.op({{"mlp.silu", 2 * T * f * a, 4 * T * f, KernelFamily::activation}},
         {{"mlp.bwd.silu", 3 * T * f * a, 8 * T * f, KernelFamily::activation}}, 2 * T * f * a);
  ops.op({{"mlp.mul", 3 * T * f * a, T * f, binary}},
         {{"mlp.bwd.mul_up", 3 * T * f * a, T * f, binary}, {"mlp.bwd.mul_act", 3 * T * f * a, T * f, binary}},
         2 * T * f * a);
  linear(ops, "mlp.down_proj", T, f, h, a != c, p); // QLoRA: Linear4bit casts the fp32 product
  residual_add_of(ops, "mlp.residual", T, h, p.param, a, rms_norm_reads_its_input(p)); // down's output: a
  // In backward: the MLP's gradients (gate_up's, the product's, the activation's) and the
  // stream's; or the slices' three zeroed T x W buffers and the stream's.
  b.backward_workspace = std::max(4 * T * f * a + 2 * T * h * e, 3 * T * W * a + 2 * T * h * e);
  return b;
}

} // namespace memwall::hf

// A Llama-family decoder (LlamaForCausalLM and the models that share its modules:
// Mistral, Qwen2/3, ...) as Hugging Face transformers runs it in eager PyTorch. Each
// block's kernel list is in forward order (EagerOps.hpp says how backward reads it).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {

BlockPlan llama_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double o = static_cast<double>(m.attn_out_dim()), c = p.compute, e = p.param;
  BlockPlan b = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  // LlamaDecoderLayer: residual = x; x = input_layernorm(x); x = self_attn(x); x = residual + x
  rms_norm(ops, "ln1", T, h, p);
  // q, k and v each read the norm's output: its three input gradients are summed in fp32.
  grad_accumulate(ops, "qkv.grad_sum_v", T * h, e);
  grad_accumulate(ops, "qkv.grad_sum_k", T * h, e);
  // Qwen2's q, k and v (attention_bias: every projection) carry biases: addmm.
  const double a = projection_output_bytes(p, true); // q, k and v (and gate and up) in their dtype
  projection(ops, "attn.q", T, h, q, true, m.qkv_bias, p);
  ops.op({}, {{"attn.q.bwd.grad_clone", 2 * T * q * a, 0, KernelFamily::generic}}); // dq [b,s,heads,d] contiguous
  projection(ops, "attn.k", T, h, kv, true, m.qkv_bias, p);
  projection(ops, "attn.v", T, h, kv, true, m.qkv_bias, p);
  ops.op({}, {{"attn.v.bwd.grad_clone", 2 * T * kv * a, 0, KernelFamily::generic}});
  // Qwen3's q_norm and k_norm per head: their fp32 weights promote q and k to fp32, so
  // rotary runs in fp32 throughout (no casts around it).
  Precision rope = p;
  rope.compute   = a; // QLoRA's fp32 q and k: rotary in fp32 throughout
  if (m.qk_norm) {
    const double d = static_cast<double>(m.head_dim());
    head_rms_norm(ops, "attn.q_norm", T, static_cast<double>(m.heads), d, p);
    head_rms_norm(ops, "attn.k_norm", T, static_cast<double>(m.kv_heads), d, p);
    if (p.autocast())
      rope.compute = rope.param;
  }
  if (p.liger) { // in place on q and k in the compute dtype: no fp32 copies to cache or cast back
    liger_rope(ops, "attn.rope", T, q, kv, p);
    if (p.builds_cache)
      dynamic_cache_update(ops, "attn", T, kv, p, 0);
  } else {
    rotary(ops, "attn.rope_q", T, q, rope);
    rotary(ops, "attn.rope_k", T, kv, rope);
    rotated_cache_update(ops, "attn", T, kv, p);
  }
  sdpa(ops, "attn.sdpa", t, m, p, !p.liger || a != c);       // fp32 q and k (rotary's, QLoRA's) cast for SDPA
  projection(ops, "attn.o", T, o, h, false, m.proj_bias, p); // reads the attention's output, already in c
  residual_add(ops, "attn.residual", T, h, p, rms_norm_reads_its_input(p));
  // residual = x; x = post_attention_layernorm(x); x = mlp(x); x = residual + x
  rms_norm(ops, "ln2", T, h, p);
  // Gradients alive at once in backward beyond what is kept: the MLP's (the product's,
  // the activation's and up's in c, the stream's in fp32), or the attention's (cuDNN's
  // fp32 dq accumulator, dk and dv per query head, the stream's).
  double heads_per_kv  = static_cast<double>(m.heads) / static_cast<double>(m.kv_heads);
  double mlp_workspace = 3 * T * f * a + 2 * T * h * e;
  if (m.moe_layer(layer)) {
    mlp_workspace = sparse_moe_block(ops, m, t, p) + 2 * T * h * e;
    residual_add_of(ops, "mlp.residual", T, h, p.param, p.param, rms_norm_reads_its_input(p));
  } else {
    grad_accumulate(ops, "mlp.grad_sum", T * h, e);
    gated_mlp(ops, "mlp", T, h, f, m.mlp_bias, p);
    residual_add_of(ops, "mlp.residual", T, h, p.param, a, rms_norm_reads_its_input(p)); // down's output: a
  }
  b.backward_workspace = std::max(mlp_workspace, T * q * 4 + 2 * heads_per_kv * T * kv * c + 2 * T * h * e);
  return b;
}

void gated_mlp(EagerOps& ops, const std::string& name, double T, double h, double f, bool bias, const Precision& p)
{
  const double c = projection_output_bytes(p, true); // gate's and up's outputs (QLoRA: fp32)
  if (p.liger) {                                     // LigerSwiGLUMLP: down(LigerSiLUMulFunction(gate(x), up(x)))
    projection(ops, name + ".gate", T, h, f, true, bias, p);
    projection(ops, name + ".up", T, h, f, true, bias, p);
    liger_swiglu(ops, name + ".swiglu", T, f, p);
    projection(ops, name + ".down", T, f, h, c != p.compute, bias, p);
    return;
  }
  projection(ops, name + ".gate", T, h, f, true, bias, p);
  // act_fn(gate) keeps its input; act * up keeps both and its product (down's input).
  ops.op({{name + ".silu", 2 * T * f * c, 4 * T * f, KernelFamily::activation}},
         {{name + ".bwd.silu", 3 * T * f * c, 8 * T * f, KernelFamily::activation}}, T * f * c);
  projection(ops, name + ".up", T, h, f, true, bias, p);
  ops.op({{name + ".mul", 3 * T * f * c, T * f, KernelFamily::residual}},
         {{name + ".bwd.mul_up", 3 * T * f * c, T * f, KernelFamily::residual},
          {name + ".bwd.mul_act", 3 * T * f * c, T * f, KernelFamily::residual}},
         3 * T * f * c);
  projection(ops, name + ".down", T, f, h, c != p.compute, bias, p); // QLoRA: Linear4bit casts the fp32 product
}

BlockPlan llama_embedding(const ModelSpec& m, const Tokens& t, const Precision& p)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab), e = p.param;
  const double d = static_cast<double>(m.head_dim());
  BlockPlan b;
  b.name   = "embed";
  b.params = m.embedding_params();
  EagerOps ops(b.kernels);
  // nn.Embedding: a gather of T rows (keeps the token ids and, for the first layer's
  // norm, its fp32 output); backward the table's dense gradient, then added to the head's
  // gradient of the same table where the two are tied (AccumulateGrad).
  // A frozen table (PEFT) has no gradient to make.
  std::vector<EagerKernel> bwd =
      p.lora.enabled ? std::vector<EagerKernel>{} : embedding_backward("embed", T, V, h, e, m.tied_embeddings);
  ops.op({{"embed.lookup", 8 * T + 2 * T * h * e, 0, KernelFamily::generic}}, bwd, 8 * T + T * h * e);
  if (m.scaled_embedding) // Gemma: times sqrt(h) in the table's dtype, each way
    ops.op({{"embed.scale", 2 * T * h * e, T * h, KernelFamily::residual}},
           {{"embed.bwd.scale", 2 * T * h * e, T * h, KernelFamily::residual}});
  // LlamaRotaryEmbedding, once a forward: inv_freq x positions (fp32, autocast off), cat,
  // cos, sin, each times the attention scaling; tiny.
  std::vector<EagerKernel> rope;
  for (const char* k : {"rope.freqs", "rope.cat", "rope.cos", "rope.sin", "rope.scale_cos", "rope.scale_sin"})
    rope.push_back({k, 2 * t.s * d * 4, t.s * d, KernelFamily::generic});
  ops.op(rope, {}, 2 * t.b * t.s * d * 4); // cos and sin, read by every layer's backward
  return b;
}

} // namespace memwall::hf

// A Llama-family decoder (LlamaForCausalLM and the models that share its modules:
// Mistral, Qwen2/3, ...) as Hugging Face transformers runs it in eager PyTorch. Each
// block's kernel list is in forward order (EagerOps.hpp says how backward reads it).
#include "HfModules.hpp"

#include <algorithm>

namespace memwall::hf {

BlockPlan llama_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double o = static_cast<double>(m.attn_out_dim()), c = p.compute, e = p.param;
  BlockPlan b;
  b.name   = "L" + std::to_string(layer);
  b.layer  = true;
  b.params = m.layer_params(layer);
  b.input_bytes = T * h * e;
  EagerOps ops(b.kernels);
  // LlamaDecoderLayer: residual = x; x = input_layernorm(x); x = self_attn(x); x = residual + x
  rms_norm(ops, "ln1", T, h, p);
  // q, k and v each read the norm's output: its three input gradients are summed in fp32.
  grad_accumulate(ops, "qkv.grad_sum_v", T * h, e);
  grad_accumulate(ops, "qkv.grad_sum_k", T * h, e);
  linear(ops, "attn.q", T, h, q, true, p);
  ops.op({}, {{"attn.q.bwd.grad_clone", 2 * T * q * c, 0, KernelFamily::generic}}); // dq [b,s,heads,d] contiguous
  linear(ops, "attn.k", T, h, kv, true, p);
  linear(ops, "attn.v", T, h, kv, true, p);
  ops.op({}, {{"attn.v.bwd.grad_clone", 2 * T * kv * c, 0, KernelFamily::generic}});
  rotary(ops, "attn.rope_q", T, q, p);
  rotary(ops, "attn.rope_k", T, kv, p);
  sdpa(ops, "attn.sdpa", t, m, p);
  linear(ops, "attn.o", T, o, h, false, p); // reads the attention's output, already in c
  residual_add(ops, "attn.residual", T, h, p);
  // residual = x; x = post_attention_layernorm(x); x = mlp(x); x = residual + x
  rms_norm(ops, "ln2", T, h, p);
  grad_accumulate(ops, "mlp.grad_sum", T * h, e);
  linear(ops, "mlp.gate", T, h, f, true, p);
  // act_fn(gate) keeps its input; act * up keeps both and its product (down's input).
  ops.op({{"mlp.silu", 2 * T * f * c, 4 * T * f, KernelFamily::activation}},
         {{"mlp.bwd.silu", 3 * T * f * c, 8 * T * f, KernelFamily::activation}}, T * f * c);
  linear(ops, "mlp.up", T, h, f, true, p);
  ops.op({{"mlp.mul", 3 * T * f * c, T * f, KernelFamily::residual}},
         {{"mlp.bwd.mul_up", 3 * T * f * c, T * f, KernelFamily::residual},
          {"mlp.bwd.mul_act", 3 * T * f * c, T * f, KernelFamily::residual}},
         3 * T * f * c);
  linear(ops, "mlp.down", T, f, h, false, p);
  residual_add(ops, "mlp.residual", T, h, p);
  // Gradients alive at once in backward beyond what is kept: the MLP's (the product's,
  // the activation's and up's in c, the stream's in fp32), or the attention's (cuDNN's
  // fp32 dq accumulator, dk and dv per query head, the stream's).
  double heads_per_kv = static_cast<double>(m.heads) / static_cast<double>(m.kv_heads);
  b.backward_workspace = std::max(3 * T * f * c + 2 * T * h * e, T * q * 4 + 2 * heads_per_kv * T * kv * c + 2 * T * h * e);
  return b;
}

BlockPlan llama_embedding(const ModelSpec& m, const Tokens& t, const Precision& p)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab), e = p.param;
  const double d = static_cast<double>(m.head_dim());
  BlockPlan b;
  b.name   = "embed";
  b.params = m.embedding_params();
  EagerOps ops(b.kernels);
  // nn.Embedding: a gather of T rows (keeps the token ids). Backward: the dense gradient
  // of the table zeroed, the ids sorted (CUB), the rows' gradients summed per id and
  // scattered in (embedding_dense_backward), then added to the head's gradient of the
  // same table where the two are tied (AccumulateGrad).
  std::vector<EagerKernel> bwd{{"embed.bwd.zero_table", V * h * e, 0, KernelFamily::generic}};
  for (const char* k : {"embed.bwd.sort_histogram", "embed.bwd.sort_onesweep", "embed.bwd.sort_onesweep2",
                        "embed.bwd.sort_onesweep3", "embed.bwd.sort_onesweep4", "embed.bwd.unique", "embed.bwd.scan",
                        "embed.bwd.segments", "embed.bwd.segment_offsets", "embed.bwd.partials"})
    bwd.push_back({k, 16 * T, 0, KernelFamily::generic});
  bwd.push_back({"embed.bwd.grad_weight", 2 * T * h * e, T * h, KernelFamily::generic});
  bwd.push_back({"embed.bwd.sum_and_scatter", 3 * T * h * e, T * h, KernelFamily::generic});
  if (m.tied_embeddings)
    bwd.push_back({"embed.bwd.tied_grad_sum", 3 * V * h * e, V * h, KernelFamily::residual});
  ops.op({{"embed.lookup", 8 * T + 2 * T * h * e, 0, KernelFamily::generic}}, bwd, 8 * T);
  // LlamaRotaryEmbedding, once a forward: inv_freq x positions (fp32, autocast off), cat,
  // cos, sin, each times the attention scaling; tiny.
  std::vector<EagerKernel> rope;
  for (const char* k : {"rope.freqs", "rope.cat", "rope.cos", "rope.sin", "rope.scale_cos", "rope.scale_sin"})
    rope.push_back({k, 2 * t.s * d * 4, t.s * d, KernelFamily::generic});
  ops.op(rope, {}, 2 * t.b * t.s * d * 4); // cos and sin, read by every layer's backward
  return b;
}

BlockPlan llama_head(const ModelSpec& m, const Tokens& t, const Precision& p)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
  const double N = T * V, c = p.compute;
  BlockPlan b;
  b.name   = "head";
  b.params = (m.final_norm ? m.norm_params() : 0.0) + m.head_params();
  b.input_bytes = T * h * p.param;
  EagerOps ops(b.kernels);
  if (m.final_norm)
    rms_norm(ops, "final_norm", T, h, p);
  // lm_head: the (tied) table cast and the logits GEMM; its weight gradient cast to fp32.
  linear(ops, "lm_head", T, h, V, true, p);
  // ForCausalLMLoss: logits.float(); labels padded and shifted; cross_entropy =
  // log_softmax (ATen's blockwise softmax reads each row three times and writes it once,
  // keeping its fp32 output) then nll_loss. Backward: nll's gradient zeroed and scattered,
  // log_softmax's backward (reads the gradient twice and the output once), the gradient
  // cast back for lm_head.
  ops.op({{"loss.upcast", N * (c + 4), 0, KernelFamily::generic}}, {{"loss.bwd.downcast", N * (4 + c), 0, KernelFamily::generic}});
  ops.op({{"loss.labels_fill", 16 * t.b, 0, KernelFamily::generic},
          {"loss.labels_pad", 16 * T, 0, KernelFamily::generic},
          {"loss.labels_shift", 16 * T, 0, KernelFamily::generic}},
         {});
  ops.op({{"loss.log_softmax", 16 * N, 4 * N, KernelFamily::generic}},
         {{"loss.bwd.log_softmax", 16 * N, 3 * N, KernelFamily::generic}}, 4 * N);
  ops.op({{"loss.nll", 4 * T + 8 * T, T, KernelFamily::generic}},
         {{"loss.bwd.ones", 4, 0, KernelFamily::generic},
          {"loss.bwd.nll_zero", 4 * N, 0, KernelFamily::generic},
          {"loss.bwd.nll_scatter", 8 * T + 4 * T, T, KernelFamily::generic}});
  // In the loss's backward its fp32 gradient and log_softmax's are alive at once.
  b.backward_workspace = 8 * N;
  return b;
}

} // namespace memwall::hf

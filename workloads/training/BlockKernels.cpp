#include "BlockKernels.hpp"

#include <algorithm>

namespace memwall {
namespace {

// A GEMM of tokens x in -> tokens x out with weights in x out.
KernelPlan gemm(const std::string& name, double tokens, double in, double out, const StepShape& s, double saved)
{
  KernelPlan k;
  k.name      = name;
  k.kclass    = KernelClass::gemm;
  k.fwd_flops = 2 * tokens * in * out;
  double weights = in * out * s.weight_bytes;
  k.fwd_bytes = weights + tokens * (in + out) * s.act_bytes;
  // Backward: input gradient and weight gradient, each a GEMM of the forward's size;
  // reads the output gradient, the saved input and the weights, accumulates the gradient.
  k.bwd_flops       = 2 * k.fwd_flops;
  k.bwd_model_flops = k.bwd_flops;
  k.bwd_bytes       = 2 * weights + weights + tokens * (2 * in + out) * s.act_bytes;
  k.saved_bytes     = saved;
  return k;
}

// An elementwise or normalization kernel reading `in` and writing `out` elements.
KernelPlan pointwise(const std::string& name, double in, double out, double flops_per_elem, const StepShape& s,
                     double saved)
{
  KernelPlan k;
  k.name        = name;
  k.kclass      = KernelClass::elementwise;
  k.fwd_flops   = flops_per_elem * in;
  k.fwd_bytes   = (in + out) * s.act_bytes;
  k.bwd_flops   = 2 * k.fwd_flops;
  k.bwd_bytes   = 2 * k.fwd_bytes;
  k.saved_bytes = saved;
  return k;
}

void attention(std::vector<KernelPlan>& ks, const ModelSpec& m, const StepShape& s, double T)
{
  double h = m.hidden, kv = m.kv_dim(), e = s.act_bytes;
  double b = s.micro_batch, sq = s.seq_len, a = m.heads;
  double core_flops = 2 * b * sq * sq * h; // QK^T and AV each (Narayanan et al. 2021)
  if (s.flash) {
    KernelPlan k;
    k.name        = "attn";
    k.kclass      = KernelClass::attention;
    k.fwd_flops   = 2 * core_flops;
    k.fwd_bytes   = T * (2 * h + 2 * kv) * e;
    // Flash backward recomputes QK^T: 5 s x s products instead of 4 (model FLOPs count 4).
    k.bwd_flops       = 2.5 * k.fwd_flops;
    k.bwd_model_flops = 2 * k.fwd_flops;
    k.bwd_bytes       = 2 * k.fwd_bytes + T * h * e;
    k.saved_bytes     = T * (h + 2 * kv) * e + b * a * sq * 4; // Q, K, V: 6sbh at kv = h; fp32 logsumexp
    ks.push_back(k);
    return;
  }
  double scores = b * a * sq * sq; // elements of the s x s attention matrix, all heads
  KernelPlan qk;
  qk.name = "attn.qk";
  qk.kclass = KernelClass::attention;
  qk.fwd_flops = core_flops;
  qk.fwd_bytes = T * (h + kv) * e + scores * e;
  qk.bwd_flops = qk.bwd_model_flops = 2 * core_flops;
  qk.bwd_bytes = 2 * qk.fwd_bytes;
  qk.saved_bytes = T * (h + kv) * e; // Q and K: 4sbh
  ks.push_back(qk);
  ks.push_back(pointwise("attn.softmax", scores, scores, 5, s, scores * e)); // softmax output: 2as^2b
  if (m.dropout)
    ks.push_back(pointwise("attn.dropout", scores, scores, 2, s, scores * 1 + scores * e)); // mask as^2b + output 2as^2b
  KernelPlan av;
  av.name = "attn.av";
  av.kclass = KernelClass::attention;
  av.fwd_flops = core_flops;
  av.fwd_bytes = scores * e + T * kv * e + T * h * e;
  av.bwd_flops = av.bwd_model_flops = 2 * core_flops;
  av.bwd_bytes = 2 * av.fwd_bytes;
  av.saved_bytes = T * kv * e; // V: 2sbh
  ks.push_back(av);
}

} // namespace

BlockPlan embedding_block(const ModelSpec& m, const StepShape& s)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  BlockPlan b;
  b.name   = "embed";
  b.params = m.embedding_params();
  // Gathers T rows of the table; saves the token ids (int64) for the sparse gradient.
  KernelPlan k = pointwise("embed.lookup", T * m.hidden, T * m.hidden, 1, s, T * 8);
  k.fwd_bytes  = 2 * T * m.hidden * s.act_bytes + T * 8;
  b.kernels.push_back(k);
  if (m.dropout)
    b.kernels.push_back(pointwise("embed.dropout", T * m.hidden, T * m.hidden, 2, s, T * m.hidden));
  b.backward_workspace = T * m.hidden * s.act_bytes;
  return b;
}

BlockPlan transformer_layer_block(const ModelSpec& m, const StepShape& s, int64_t layer)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, kv = m.kv_dim(), f = m.ffn_hidden, e = s.act_bytes;
  BlockPlan b;
  b.name   = "L" + std::to_string(layer);
  b.params = m.layer_params();
  auto& ks = b.kernels;
  ks.push_back(pointwise("ln1", T * h, T * h, 8, s, T * h * e));       // LN input: 2sbh
  ks.push_back(gemm("qkv", T, h, h + 2 * kv, s, T * h * e));           // QKV input: 2sbh
  attention(ks, m, s, T);
  ks.push_back(gemm("proj", T, h, h, s, T * h * e));                   // projection input: 2sbh
  if (m.dropout)
    ks.push_back(pointwise("attn.resid_dropout", T * h, T * h, 2, s, T * h)); // mask: sbh
  ks.push_back(pointwise("ln2", T * h, T * h, 8, s, T * h * e));       // LN input: 2sbh
  double up_out = m.mlp == MlpKind::swiglu ? 2 * f : f;
  ks.push_back(gemm("mlp.up", T, h, up_out, s, T * h * e));            // MLP input: 2sbh
  // GELU saves its input (8sbh at f = 4h); SwiGLU saves gate and up projections.
  ks.push_back(pointwise("mlp.act", T * up_out, T * f, 8, s, T * up_out * e));
  ks.push_back(gemm("mlp.down", T, f, h, s, T * f * e));               // down input: 8sbh at f = 4h
  if (m.dropout)
    ks.push_back(pointwise("mlp.dropout", T * h, T * h, 2, s, T * h)); // mask: sbh
  double widest = std::max({h + 2 * kv, up_out, h});
  b.backward_workspace = 2 * T * widest * e;
  if (!s.flash)
    b.backward_workspace += static_cast<double>(s.micro_batch) * m.heads * s.seq_len * s.seq_len * e;
  return b;
}

BlockPlan head_block(const ModelSpec& m, const StepShape& s)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, V = m.vocab, e = s.act_bytes;
  BlockPlan b;
  b.name   = "head";
  b.params = (m.final_norm ? m.norm_params() : 0.0) + m.head_params();
  if (m.final_norm)
    b.kernels.push_back(pointwise("final_ln", T * h, T * h, 8, s, T * h * e));
  // The logits are kept for the loss's backward; the loss keeps an fp32 softmax.
  b.kernels.push_back(gemm("logits", T, h, V, s, T * h * e + T * V * e));
  b.kernels.push_back(pointwise("loss", T * V, T * V, 5, s, T * V * 4));
  b.backward_workspace = T * V * e + T * h * e;
  return b;
}

} // namespace memwall

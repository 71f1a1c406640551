#include "BlockKernels.hpp"

#include <algorithm>

namespace memwall {
namespace {

// QLoRA stores NF4 weights with one fp8 constant per 64 weights and one fp32 constant
// per 256 of those: 4 + 8/64 + 32/(64*256) = 4.127 bits (Dettmers et al. 2023, §3).
constexpr double nf4_bytes_per_weight = 4.127 / 8;

// Replicated tensors are split by tp only under sequence parallelism.
double rep_div(const StepShape& s) { return s.sp ? static_cast<double>(s.tp) : 1.0; }
double tp(const StepShape& s) { return static_cast<double>(s.tp); }

// A GEMM of tokens x in -> tokens x out with weights in x out (already split by tp).
// A frozen GEMM (LoRA base) computes only the input gradient in backward; an adapted
// one adds the rank-r adapter's two small GEMMs.
KernelPlan gemm(const std::string& name, double tokens, double in, double out, const StepShape& s, double saved)
{
  KernelPlan k;
  k.name      = name;
  k.kclass    = KernelClass::gemm;
  k.dtype     = s.gemm_dtype;
  k.fwd_flops = 2 * tokens * in * out;
  k.shape     = gemm_shape(tokens, out, in);
  bool frozen    = s.lora.enabled;
  double weights = in * out * (frozen ? s.frozen_weight_bytes : s.weight_bytes);
  k.fwd_bytes = weights + tokens * (in + out) * s.act_bytes;
  // Backward: input gradient and weight gradient, each a GEMM of the forward's size;
  // reads the output gradient, the saved input and the weights, accumulates the gradient.
  k.bwd_flops = 2 * k.fwd_flops;
  k.bwd_bytes = 2 * weights + weights + tokens * (2 * in + out) * s.act_bytes;
  if (frozen) {
    k.bwd_flops = k.fwd_flops;
    k.bwd_bytes = weights + tokens * (in + out) * s.act_bytes;
  }
  if (s.lora.targets_kernel(name)) {
    double r       = static_cast<double>(s.lora.rank);
    double adapter = 2 * tokens * r * (in + out);
    k.fwd_flops += adapter;
    k.bwd_flops += 2 * adapter;
    k.fwd_bytes += r * (in + out) * s.weight_bytes + tokens * r * s.act_bytes;
    k.bwd_bytes += 3 * r * (in + out) * s.weight_bytes + 2 * tokens * r * s.act_bytes;
    saved += tokens * r * s.act_bytes; // the adapter's down-projection output
  }
  k.bwd_model_flops = k.bwd_flops;
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
  k.dtype       = Dtype::fp32;
  k.fwd_flops   = flops_per_elem * in;
  k.fwd_bytes   = (in + out) * s.act_bytes;
  k.bwd_flops   = 2 * k.fwd_flops;
  k.bwd_bytes   = 2 * k.fwd_bytes;
  k.saved_bytes = saved;
  return k;
}

// The attention core of one tp rank: a/t heads. Q, K and V are saved by the QKV GEMM.
void attention(std::vector<KernelPlan>& ks, const ModelSpec& m, const StepShape& s, double T)
{
  double h = m.hidden / tp(s), kv = m.kv_dim() / tp(s), e = s.act_bytes;
  double b = s.micro_batch, sq = s.seq_len, a = m.heads / tp(s);
  double core_flops = 2 * b * sq * sq * h; // QK^T and AV each (Narayanan et al. 2021)
  if (s.flash) {
    KernelPlan k;
    k.name        = "attn";
    k.kclass      = KernelClass::attention;
    k.dtype       = s.attn_dtype;
    k.fwd_flops   = 2 * core_flops;
    k.fwd_bytes   = T * (2 * h + 2 * kv) * e;
    // Flash backward recomputes QK^T: 5 s x s products instead of 4 (model FLOPs count 4).
    k.bwd_flops       = 2.5 * k.fwd_flops;
    k.bwd_model_flops = 2 * k.fwd_flops;
    k.bwd_bytes       = 2 * k.fwd_bytes + T * h * e;
    k.saved_bytes     = b * a * sq * 4; // fp32 log-sum-exp per head and token
    ks.push_back(k);
    return;
  }
  double scores = b * a * sq * sq; // elements of the s x s attention matrices of a/t heads
  KernelPlan qk;
  qk.name = "attn.qk";
  qk.kclass = KernelClass::attention;
  qk.dtype = s.attn_dtype;
  qk.fwd_flops = core_flops;
  qk.fwd_bytes = T * (h + kv) * e + scores * e;
  qk.bwd_flops = qk.bwd_model_flops = 2 * core_flops;
  qk.bwd_bytes = 2 * qk.fwd_bytes;
  qk.selective = true;
  ks.push_back(qk);
  KernelPlan softmax = pointwise("attn.softmax", scores, scores, 5, s, scores * e); // softmax output: 2as^2b
  softmax.selective  = true;
  ks.push_back(softmax);
  if (m.dropout) {
    KernelPlan drop = pointwise("attn.dropout", scores, scores, 2, s, scores * 1 + scores * e); // mask + output: 3as^2b
    drop.selective  = true;
    ks.push_back(drop);
  }
  KernelPlan av;
  av.name = "attn.av";
  av.kclass = KernelClass::attention;
  av.dtype = s.attn_dtype;
  av.fwd_flops = core_flops;
  av.fwd_bytes = scores * e + T * kv * e + T * h * e;
  av.bwd_flops = av.bwd_model_flops = 2 * core_flops;
  av.bwd_bytes = 2 * av.fwd_bytes;
  av.selective = true;
  ks.push_back(av);
}

// Megatron's f/g operators around a column-split ... row-split pair. Without sequence
// parallelism: all-reduce after the row-split GEMM in forward and after the column-split
// GEMM's input gradient in backward. With it: all-gather before the column-split GEMM
// (again in backward, since only the split input is saved) and reduce-scatter after the
// row-split one, and the transposes in backward.
void tp_pair(KernelPlan& norm, KernelPlan& column, KernelPlan& row, double full_act, const StepShape& s)
{
  if (s.tp == 1)
    return;
  if (!s.sp) {
    row.fwd_after     = {CollectiveKind::all_reduce, full_act};
    column.bwd_after  = {CollectiveKind::all_reduce, full_act};
    return;
  }
  norm.fwd_after    = {CollectiveKind::all_gather, full_act};
  row.fwd_after     = {CollectiveKind::reduce_scatter, full_act};
  row.bwd_before    = {CollectiveKind::all_gather, full_act};
  column.bwd_before = {CollectiveKind::all_gather, full_act};
  column.bwd_after  = {CollectiveKind::reduce_scatter, full_act};
}

size_t index_of(const std::vector<KernelPlan>& ks, const std::string& name)
{
  for (size_t i = 0; i < ks.size(); ++i)
    if (ks[i].name == name)
      return i;
  return ks.size();
}

} // namespace

StepShape step_shape(const TrainingConfig& cfg)
{
  StepShape s;
  s.micro_batch  = cfg.micro_batch;
  s.seq_len      = cfg.seq_len;
  s.tp           = cfg.tp;
  s.sp           = cfg.sp;
  // fp8 training (Transformer Engine) keeps bf16 activations and weights and casts each
  // GEMM's operands to fp8; attention runs in bf16.
  s.act_bytes    = cfg.precision == Dtype::fp32 ? 4.0 : 2.0;
  s.weight_bytes = s.act_bytes;
  s.frozen_weight_bytes = cfg.lora.nf4_base ? nf4_bytes_per_weight : s.weight_bytes;
  s.gemm_dtype   = cfg.precision;
  s.attn_dtype   = cfg.precision == Dtype::fp8 ? Dtype::bf16 : cfg.precision;
  s.flash        = cfg.flash_attention;
  s.lora         = cfg.lora;
  return s;
}

BlockPlan embedding_block(const ModelSpec& m, const StepShape& s)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, e = s.act_bytes;
  BlockPlan b;
  b.name = "embed";
  // Vocabulary-parallel: each rank holds V/t rows and the partial lookups are all-reduced.
  double params = m.embedding_params() / tp(s);
  (s.lora.enabled ? b.frozen_params : b.params) = params;
  // Gathers T rows of the table; saves the token ids (int64) for the sparse gradient.
  KernelPlan k = pointwise("embed.lookup", T * h, T * h, 1, s, T * 8);
  k.fwd_bytes  = 2 * T * h * e + T * 8;
  if (s.tp > 1)
    k.fwd_after = {s.sp ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, T * h * e};
  b.kernels.push_back(k);
  if (m.dropout)
    b.kernels.push_back(pointwise("embed.dropout", T * h / rep_div(s), T * h / rep_div(s), 2, s, T * h / rep_div(s)));
  b.backward_workspace = T * h * e;
  return b;
}

BlockPlan transformer_layer_block(const ModelSpec& m, const StepShape& s, int64_t layer)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, kv = m.kv_dim(), f = m.ffn_hidden, e = s.act_bytes, t = tp(s), r = rep_div(s);
  BlockPlan b;
  b.name  = "L" + std::to_string(layer);
  b.layer = true;
  // Norm weights are replicated on every tp rank; the rest is split.
  double norms  = 2 * m.norm_params();
  double params = (m.layer_params() - norms) / t + norms;
  if (s.lora.enabled) {
    b.frozen_params = params;
    double rk = static_cast<double>(s.lora.rank);
    double up = m.mlp == MlpKind::swiglu ? 2 * f : f;
    if (s.lora.targets_kernel("qkv")) b.params += rk * (h + (h + 2 * kv) / t);
    if (s.lora.targets_kernel("proj")) b.params += rk * (h / t + h);
    if (s.lora.targets_kernel("mlp.up")) b.params += rk * (h + up / t);
    if (s.lora.targets_kernel("mlp.down")) b.params += rk * (f / t + h);
  } else {
    b.params = params;
  }
  b.input_bytes = T * h * e / r;
  auto& ks = b.kernels;
  ks.push_back(pointwise("ln1", T * h / r, T * h / r, 8, s, T * h * e / r));       // LN input: 2sbh
  ks.push_back(gemm("qkv", T, h, (h + 2 * kv) / t, s, T * h * e / r + T * (h + 2 * kv) * e / t)); // input 2sbh; Q, K, V 6sbh/t
  attention(ks, m, s, T);
  ks.push_back(gemm("proj", T, h / t, h, s, T * h * e / t));                        // projection input: 2sbh/t
  if (m.dropout)
    ks.push_back(pointwise("attn.resid_dropout", T * h / r, T * h / r, 2, s, T * h / r)); // mask: sbh
  ks.push_back(pointwise("ln2", T * h / r, T * h / r, 8, s, T * h * e / r));       // LN input: 2sbh
  double up_out = m.mlp == MlpKind::swiglu ? 2 * f : f;
  ks.push_back(gemm("mlp.up", T, h, up_out / t, s, T * h * e / r));                 // MLP input: 2sbh
  // GELU saves its input (8sbh/t at f = 4h); SwiGLU saves gate and up projections.
  ks.push_back(pointwise("mlp.act", T * up_out / t, T * f / t, 8, s, T * up_out * e / t));
  ks.push_back(gemm("mlp.down", T, f / t, h, s, T * f * e / t));                    // down input: 8sbh/t
  if (m.dropout)
    ks.push_back(pointwise("mlp.dropout", T * h / r, T * h / r, 2, s, T * h / r)); // mask: sbh
  tp_pair(ks[index_of(ks, "ln1")], ks[index_of(ks, "qkv")], ks[index_of(ks, "proj")], T * h * e, s);
  tp_pair(ks[index_of(ks, "ln2")], ks[index_of(ks, "mlp.up")], ks[index_of(ks, "mlp.down")], T * h * e, s);
  double widest = std::max({(h + 2 * kv) / t, up_out / t, h});
  b.backward_workspace = 2 * T * widest * e;
  if (!s.flash)
    b.backward_workspace += static_cast<double>(s.micro_batch) * m.heads / t * s.seq_len * s.seq_len * e;
  return b;
}

BlockPlan head_block(const ModelSpec& m, const StepShape& s)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, V = m.vocab / tp(s), e = s.act_bytes, r = rep_div(s);
  BlockPlan b;
  b.name = "head";
  double params = (m.final_norm ? m.norm_params() : 0.0) + m.head_params() / tp(s);
  (s.lora.enabled ? b.frozen_params : b.params) = params;
  b.input_bytes = T * h * e / r;
  if (m.final_norm)
    b.kernels.push_back(pointwise("final_ln", T * h / r, T * h / r, 8, s, T * h * e / r));
  // Vocabulary-parallel logits: the input is replicated (gathered under sp); the logits
  // (V/t columns) are kept for the loss's backward, and the loss keeps an fp32 softmax.
  KernelPlan logits = gemm("logits", T, h, V, s, T * h * e + T * V * e);
  if (s.tp > 1) {
    if (s.sp && !b.kernels.empty())
      b.kernels.back().fwd_after = {CollectiveKind::all_gather, T * h * e};
    logits.bwd_after = {s.sp ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, T * h * e};
  }
  b.kernels.push_back(logits);
  b.kernels.push_back(pointwise("loss", T * V, T * V, 5, s, T * V * 4));
  b.backward_workspace = T * V * e + T * h * e;
  return b;
}

} // namespace memwall

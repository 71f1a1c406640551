#include "BlockKernels.hpp"
#include "KernelBuilders.hpp"

#include <algorithm>

namespace memwall {
namespace {

using namespace kernels;

// QLoRA stores NF4 weights with one fp8 constant per 64 weights and one fp32 constant
// per 256 of those: 4 + 8/64 + 32/(64*256) = 4.127 bits (Dettmers et al. 2023, §3).
constexpr double nf4_bytes_per_weight = 4.127 / 8;


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
    KernelPlan drop = dropout("attn.dropout", scores, s, scores * 1 + scores * e); // mask + output: 3as^2b
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
  // The context [b, a/t, s, d] made contiguous as [s, b, h/t] for the projection: a copy
  // each way, recomputed with the attention core.
  KernelPlan permute = forward_only("attn.context_permute", 2 * T * h * e, 0);
  permute.bwd_bytes  = permute.fwd_bytes;
  permute.selective  = true;
  ks.push_back(permute);
}

// The residual add after the projection and after the MLP: with dropout, Megatron's
// fused bias-dropout-add (read branch and residual, write sum and a 1-byte mask; its
// backward reads gradient and mask); without, a plain add whose backward is free.
KernelPlan residual_add(const std::string& name, const ModelSpec& m, double elems, double e)
{
  KernelPlan k = forward_only(name, 3 * elems * e, elems);
  if (m.dropout) {
    k.fwd_bytes += elems;
    k.bwd_bytes   = (2 * e + 1) * elems;
    k.bwd_flops   = elems;
    k.saved_bytes = elems;
  }
  return k;
}

// A linear layer's bias gradient: the output gradient summed over tokens, its own
// kernel in backward (runs beside the GEMM's, listed after it in forward order).
void bias_grad(std::vector<KernelPlan>& ks, bool bias, const std::string& gemm_name, double out_elems, double e)
{
  if (bias)
    ks.push_back(backward_only(gemm_name + ".bias_grad", out_elems * e, out_elems));
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

BlockPlan transformer_layer_block(const ModelSpec& m, const StepShape& s, int64_t layer)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, kv = m.kv_dim(), f = m.ffn_hidden, e = s.act_bytes, t = tp(s), r = rep_div(s);
  BlockPlan b;
  b.name  = "L" + std::to_string(layer);
  b.layer = true;
  // Norm weights are replicated on every tp rank; the rest is split.
  double norms  = 2 * m.norm_params();
  double params = (m.layer_params(layer) - norms) / t + norms;
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
  // Backward sums the gradients of the two consumers of each residual-stream tensor
  // (its norm and the residual add): read 2, write 1. Listed before the norm, so it runs
  // after the norm's backward.
  const double stream = T * h / r;
  ks.push_back(backward_only("ln1.grad_sum", 3 * stream * e, stream));
  ks.push_back(pointwise("ln1", stream, stream, 8, s, T * h * e / r));       // LN input: 2sbh
  ks.push_back(gemm("qkv", T, h, (h + 2 * kv) / t, s, T * h * e / r + T * (h + 2 * kv) * e / t)); // input 2sbh; Q, K, V 6sbh/t
  bias_grad(ks, m.qkv_bias, "qkv", T * (h + 2 * kv) / t, e);
  if (!m.learned_positions) { // rotary on Q and K, in place
    KernelPlan rope = pointwise("attn.rope", T * (h + kv) / t, T * (h + kv) / t, 6, s, 0);
    rope.bwd_bytes  = rope.fwd_bytes; // the gradient rotated back, in place
    ks.push_back(rope);
  }
  attention(ks, m, s, T);
  ks.push_back(gemm("proj", T, h / t, h, s, T * h * e / t));                        // projection input: 2sbh/t
  bias_grad(ks, m.proj_bias, "proj", stream, e);
  ks.push_back(residual_add("attn.residual", m, stream, e));                        // dropout mask: sbh
  ks.push_back(backward_only("ln2.grad_sum", 3 * stream * e, stream));
  ks.push_back(pointwise("ln2", stream, stream, 8, s, T * h * e / r));              // LN input: 2sbh
  double up_out = m.mlp == MlpKind::swiglu ? 2 * f : f;
  ks.push_back(gemm("mlp.up", T, h, up_out / t, s, T * h * e / r));                 // MLP input: 2sbh
  bias_grad(ks, m.mlp_bias, "mlp.up", T * up_out / t, e);
  // GELU saves its input (8sbh/t at f = 4h); SwiGLU saves gate and up projections.
  ks.push_back(pointwise("mlp.act", T * up_out / t, T * f / t, 8, s, T * up_out * e / t));
  ks.push_back(gemm("mlp.down", T, f / t, h, s, T * f * e / t));                    // down input: 8sbh/t
  bias_grad(ks, m.mlp_bias, "mlp.down", stream, e);
  ks.push_back(residual_add("mlp.residual", m, stream, e));                         // dropout mask: sbh
  tp_pair(ks[index_of(ks, "ln1")], ks[index_of(ks, "qkv")], ks[index_of(ks, "proj")], T * h * e, s);
  tp_pair(ks[index_of(ks, "ln2")], ks[index_of(ks, "mlp.up")], ks[index_of(ks, "mlp.down")], T * h * e, s);
  double widest = std::max({(h + 2 * kv) / t, up_out / t, h});
  b.backward_workspace = 2 * T * widest * e;
  if (!s.flash)
    b.backward_workspace += static_cast<double>(s.micro_batch) * m.heads / t * s.seq_len * s.seq_len * e;
  return b;
}

} // namespace memwall

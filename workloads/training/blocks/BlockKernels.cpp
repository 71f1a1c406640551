#include "workloads/training/blocks/BlockKernels.hpp"
#include "workloads/training/blocks/KernelBuilders.hpp"

#include <algorithm>

namespace memwall {
namespace {

using namespace kernels;

// QLoRA stores NF4 weights with one fp8 constant per 64 weights and one fp32 constant
// per 256 of those: 4 + 8/64 + 32/(64*256) = 4.127 bits (Dettmers et al. 2023, §3).
constexpr double nf4_bytes_per_weight = 4.127 / 8;

// Per-token widths of one tp rank's attention tensors: queries, keys, values (as the
// core reads them) and the context it writes (the projection's input).
struct AttnWidths {
  double q = 0, k = 0, v = 0, out = 0;
  double window = 1; // share of the s x s query-key pairs a sliding window keeps
};

AttnWidths attn_widths(const ModelSpec& m, const StepShape& s, int64_t layer)
{
  AttnWidths w;
  double t = tp(s);
  w.q      = m.q_dim() / t;
  w.out    = m.attn_out_dim() / t;
  if (m.mla.enabled()) { // K and V rebuilt per head from the latent (DeepSeek-V2 §2.1.2)
    w.k = m.heads * m.mla.qk_head_dim() / t;
    w.v = w.out;
  } else {
    w.k = w.v = m.kv_dim() / t;
  }
  if (m.windowed_layer(layer))
    w.window = std::min(1.0, static_cast<double>(m.sliding_window) / static_cast<double>(s.kv_seq));
  return w;
}

// The attention core of one tp rank: a/t heads. Q, K and V are saved by the GEMMs that
// make them. Under context parallelism the rank's s/cp queries attend over all s keys:
// K and V are all-gathered from the cp group before it, again before its backward (the
// other ranks' K and V are not kept, as ring attention passes them round again), and
// their gradients reduce-scattered after it (Liu et al. 2023; Megatron-Core's context
// parallelism moves the same bytes in cp - 1 ring steps).
void attention(std::vector<KernelPlan>& ks, const ModelSpec& m, const StepShape& s, double T, const AttnWidths& w)
{
  double e = s.act_bytes;
  double b = s.micro_batch, sq = s.seq_len, sk = s.kv_seq, a = m.heads / tp(s);
  double Tk = b * sk; // keys and values the core reads
  // QK^T and AV each 2 b s^2 x width (Narayanan et al. 2021); a window keeps s x w pairs.
  double qk_flops = 2 * b * sq * sk * w.q * w.window, av_flops = 2 * b * sq * sk * w.out * w.window;
  double gathered = s.cp > 1 ? Tk * (w.k + w.v) * e : 0.0;
  if (s.cp > 1)
    ks.back().fwd_after = {CollectiveKind::all_gather, gathered, CommGroup::cp};
  const TpComm kv_again{CollectiveKind::all_gather, gathered, CommGroup::cp};
  const TpComm kv_grads{CollectiveKind::reduce_scatter, gathered, CommGroup::cp};
  if (s.flash) {
    KernelPlan k;
    k.name      = "attn";
    k.kclass    = KernelClass::attention;
    k.dtype     = s.attn_dtype;
    k.fwd_flops = qk_flops + av_flops;
    k.fwd_bytes = T * (w.q + w.out) * e + Tk * (w.k + w.v) * e;
    // Flash backward recomputes QK^T: 5 s x s products instead of 4 (model FLOPs count 4).
    k.bwd_flops       = 2.5 * k.fwd_flops;
    k.bwd_model_flops = 2 * k.fwd_flops;
    k.bwd_bytes       = 2 * k.fwd_bytes + T * w.out * e;
    k.saved_bytes     = b * a * sq * 4; // fp32 log-sum-exp per head and token
    if (s.cp > 1) {
      k.bwd_before = kv_again;
      k.bwd_after  = kv_grads;
    }
    ks.push_back(k);
    return;
  }
  double scores = b * a * sq * sk; // elements of the s x s attention matrices of a/t heads
  KernelPlan qk;
  qk.name      = "attn.qk";
  qk.kclass    = KernelClass::attention;
  qk.dtype     = s.attn_dtype;
  qk.fwd_flops = qk_flops;
  qk.fwd_bytes = T * w.q * e + Tk * w.k * e + scores * e;
  if (s.cp > 1) // the backward of the core runs from av back to qk
    qk.bwd_after = kv_grads;
  qk.bwd_flops = qk.bwd_model_flops = 2 * qk_flops;
  qk.bwd_bytes                      = 2 * qk.fwd_bytes;
  qk.selective                      = true;
  ks.push_back(qk);
  // Softmax output saved: 2as^2b.
  KernelPlan softmax = pointwise("attn.softmax", KernelFamily::generic, scores, scores, 5, s, scores * e);
  softmax.selective  = true;
  ks.push_back(softmax);
  if (m.dropout) {
    KernelPlan drop = dropout("attn.dropout", scores, s, scores * 1 + scores * e); // mask + output: 3as^2b
    drop.selective  = true;
    ks.push_back(drop);
  }
  KernelPlan av;
  av.name      = "attn.av";
  av.kclass    = KernelClass::attention;
  av.dtype     = s.attn_dtype;
  av.fwd_flops = av_flops;
  av.fwd_bytes = scores * e + Tk * w.v * e + T * w.out * e;
  av.bwd_flops = av.bwd_model_flops = 2 * av_flops;
  if (s.cp > 1)
    av.bwd_before = kv_again;
  av.bwd_bytes = 2 * av.fwd_bytes;
  av.selective = true;
  ks.push_back(av);
  // The context [b, a/t, s, d] made contiguous as [s, b, h/t] for the projection: a copy
  // each way, recomputed with the attention core.
  KernelPlan permute = forward_only("attn.context_permute", 2 * T * w.out * e, 0);
  permute.bwd_bytes  = permute.fwd_bytes;
  permute.selective  = true;
  ks.push_back(permute);
}

} // namespace

StepShape step_shape(const TrainingConfig& cfg)
{
  StepShape s;
  s.micro_batch    = cfg.micro_batch;
  s.seq_len        = cfg.seq_len / cfg.cp;
  s.kv_seq         = cfg.seq_len;
  s.cp             = cfg.cp;
  s.tp             = cfg.tp;
  s.ep             = cfg.ep;
  s.etp            = cfg.etp;
  s.moe_dispatcher = cfg.moe_dispatcher;
  s.sp             = cfg.sp;
  // fp8 training (Transformer Engine) keeps bf16 activations and weights and casts each
  // GEMM's operands to fp8; attention runs in bf16.
  s.act_bytes            = cfg.precision == Dtype::fp32 ? 4.0 : 2.0;
  s.weight_bytes         = s.act_bytes;
  s.frozen_weight_bytes  = cfg.lora.nf4_base ? nf4_bytes_per_weight : s.weight_bytes;
  s.gemm_dtype           = cfg.precision;
  s.attn_dtype           = cfg.precision == Dtype::fp8 ? Dtype::bf16 : cfg.precision;
  s.flash                = cfg.flash_attention;
  s.recompute_layers     = cfg.recompute == Recompute::full;
  s.lora                 = cfg.lora;
  s.liger_kernel         = cfg.liger_kernel;
  s.transformers_release = cfg.transformers_release;
  s.optimizer            = cfg.optimizer;
  return s;
}

namespace {

// The attention half of a layer: norm, Q/K/V (or MLA's projections), core, output
// projection, residual add.
void attention_half(BlockPlan& b, const ModelSpec& m, const StepShape& s, int64_t layer, double T)
{
  double h = m.hidden, e = s.act_bytes, t = tp(s), r = rep_div(s);
  const AttnWidths w = attn_widths(m, s, layer);
  auto& ks           = b.kernels;
  // Backward sums the gradients of the two consumers of each residual-stream tensor
  // (its norm and the residual add): read 2, write 1. Listed before the norm, so it runs
  // after the norm's backward.
  const double stream = T * h / r;
  ks.push_back(grad_sum("ln1.grad_sum", stream, e));
  ks.push_back(pointwise("ln1", KernelFamily::norm, stream, stream, 8, s, T * h * e / r)); // LN input: 2sbh
  std::string column = "qkv";
  if (m.mla.enabled()) {
    // DeepSeek-V2 §2.1: the down-projections (and their norms) are replicated on every
    // tp rank, the up-projections split by heads; the shared rotary key comes with the
    // KV latent. Each GEMM saves its input.
    const MlaSpec& a = m.mla;
    double ql = a.q_lora_rank, kvl = a.kv_lora_rank, rope = a.qk_rope_head_dim;
    if (ql > 0) {
      column = "attn.q_down";
      ks.push_back(gemm("attn.q_down", T, h, ql, s, T * h * e / r));
      ks.push_back(pointwise("attn.q_norm", KernelFamily::norm, T * ql, T * ql, 8, s, T * ql * e));
      ks.push_back(gemm("attn.q_up", T, ql, w.q, s, T * ql * e));
    } else {
      column = "attn.q";
      ks.push_back(gemm("attn.q", T, h, w.q, s, T * h * e / r));
    }
    ks.push_back(gemm("attn.kv_down", T, h, kvl + rope, s, 0)); // the same input as the queries'
    ks.push_back(pointwise("attn.kv_norm", KernelFamily::norm, T * kvl, T * kvl, 8, s, T * kvl * e));
    ks.push_back(
        gemm("attn.kv_up", T, kvl, w.k - m.heads * rope / t + w.v, s, T * kvl * e + T * (w.q + w.k + w.v) * e));
  } else {
    ks.push_back(
        gemm("qkv", T, h, w.q + 2 * w.k, s, T * h * e / r + T * (w.q + 2 * w.k) * e)); // input 2sbh; Q, K, V 6sbh/t
    bias_grad(ks, m.qkv_bias, "qkv", T * (w.q + 2 * w.k), e);
  }
  if (m.qk_norm) { // a norm over each head of Q and K (Qwen3, Gemma 3), saving its input
    double qk = T * (w.q + w.k);
    ks.push_back(pointwise("attn.qk_norm", KernelFamily::norm, qk, qk, 8, s, qk * e));
  }
  if (!m.learned_positions) { // rotary on Q and K, in place
    double rotated =
        m.mla.enabled() ? T * (m.heads * m.mla.qk_rope_head_dim / t + m.mla.qk_rope_head_dim) : T * (w.q + w.k);
    KernelPlan rope = pointwise("attn.rope", KernelFamily::rope, rotated, rotated, 6, s, 0);
    rope.bwd_bytes  = rope.fwd_bytes; // the gradient rotated back, in place
    ks.push_back(rope);
  }
  attention(ks, m, s, T, w);
  ks.push_back(gemm("proj", T, w.out, h, s, T * w.out * e)); // projection input: 2sbh/t
  bias_grad(ks, m.proj_bias, "proj", stream, e);
  if (m.norms_per_layer == 4) // Gemma 2/3: a norm on the attention output before the residual
    ks.push_back(pointwise("attn.post_ln", KernelFamily::norm, stream, stream, 8, s, stream * e));
  ks.push_back(residual_add("attn.residual", m, stream, e)); // dropout mask: sbh
  tp_pair(ks[index_of(ks, "ln1")], ks[index_of(ks, column)], ks[index_of(ks, "proj")], T * h * e, s);
}

// The dense MLP half: norm, up (gate and up for gated MLPs), activation, down, residual.
void dense_mlp_half(BlockPlan& b, const ModelSpec& m, const StepShape& s, double T)
{
  double h = m.hidden, f = m.ffn_hidden, e = s.act_bytes, t = tp(s), r = rep_div(s);
  auto& ks            = b.kernels;
  const double stream = T * h / r;
  ks.push_back(grad_sum("ln2.grad_sum", stream, e));
  ks.push_back(pointwise("ln2", KernelFamily::norm, stream, stream, 8, s, T * h * e / r)); // LN input: 2sbh
  double up_out = m.mlp == MlpKind::swiglu ? 2 * f : f;
  ks.push_back(gemm("mlp.up", T, h, up_out / t, s, T * h * e / r)); // MLP input: 2sbh
  bias_grad(ks, m.mlp_bias, "mlp.up", T * up_out / t, e);
  // GELU saves its input (8sbh/t at f = 4h); SwiGLU saves gate and up projections.
  ks.push_back(pointwise("mlp.act", KernelFamily::activation, T * up_out / t, T * f / t, 8, s, T * up_out * e / t));
  ks.push_back(gemm("mlp.down", T, f / t, h, s, T * f * e / t)); // down input: 8sbh/t
  bias_grad(ks, m.mlp_bias, "mlp.down", stream, e);
  if (m.norms_per_layer == 4)
    ks.push_back(pointwise("mlp.post_ln", KernelFamily::norm, stream, stream, 8, s, stream * e));
  ks.push_back(residual_add("mlp.residual", m, stream, e)); // dropout mask: sbh
  tp_pair(ks[index_of(ks, "ln2")], ks[index_of(ks, "mlp.up")], ks[index_of(ks, "mlp.down")], T * h * e, s);
}

} // namespace

BlockPlan transformer_layer_block(const ModelSpec& m, const StepShape& s, int64_t layer)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, kv = m.kv_dim(), f = m.ffn_hidden, e = s.act_bytes, t = tp(s), r = rep_div(s);
  BlockPlan b;
  b.name  = "L" + std::to_string(layer);
  b.layer = true;
  // Norm weights and the router are replicated on every tp rank; the rest is split, and
  // routed experts spread over the ep ranks too.
  const bool moe    = m.moe_layer(layer);
  double replicated = m.layer_norm_params() + (moe ? m.router_params() : 0.0);
  if (m.mla.enabled())
    replicated += m.mla_down_params() + m.mla_norm_params();
  double experts = moe ? m.moe.experts * m.expert_params() : 0.0;
  double params  = (m.layer_params(layer) - replicated - experts) / t + replicated;
  if (moe) {
    b.expert_params = static_cast<double>(m.moe.experts / s.ep) * m.expert_params() / static_cast<double>(s.etp);
    params += b.expert_params;
  }
  if (s.lora.enabled) {
    b.frozen_params = params;
    double rk       = static_cast<double>(s.lora.rank);
    double up       = m.mlp == MlpKind::swiglu ? 2 * f : f;
    if (s.lora.targets_kernel("qkv"))
      b.params += rk * (h + (h + 2 * kv) / t);
    if (s.lora.targets_kernel("proj"))
      b.params += rk * (h / t + h);
    if (s.lora.targets_kernel("mlp.up"))
      b.params += rk * (h + up / t);
    if (s.lora.targets_kernel("mlp.down"))
      b.params += rk * (f / t + h);
  } else {
    b.params = params;
  }
  b.input_bytes = T * h * e / r;
  attention_half(b, m, s, layer, T);
  double widest = h;
  for (const KernelPlan& k : b.kernels)
    if (k.kclass == KernelClass::gemm)
      widest = std::max(widest, static_cast<double>(k.shape.n));
  if (moe) {
    moe_mlp_half(b, m, s, T);
  } else {
    dense_mlp_half(b, m, s, T);
    widest = std::max(widest, (m.mlp == MlpKind::swiglu ? 2 * f : f) / t);
  }
  b.backward_workspace = std::max(b.backward_workspace, 2 * T * widest * e);
  if (!s.flash)
    b.backward_workspace += static_cast<double>(s.micro_batch) * m.heads / t * s.seq_len * s.kv_seq * e;
  return b;
}

} // namespace memwall

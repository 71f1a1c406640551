#include "workloads/inference/InferenceKernels.hpp"

#include "workloads/inference/engine/InferenceEngine.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {

InferenceKernels::InferenceKernels(const ModelSpec& m, const InferenceConfig& c)
    : m_(m), c_(c), engine_(c.engine ? c.engine : default_inference_engine())
{
  tp_          = static_cast<double>(c.tp);
  dp_          = static_cast<double>(c.attention_dp());
  expert_div_  = static_cast<double>(std::max(c.tp, c.ep));
  h_           = static_cast<double>(m.hidden);
  double heads = static_cast<double>(m.heads / c.tp);
  if (m.mla.enabled()) {
    double latent = static_cast<double>(m.mla.kv_lora_rank), rope = static_cast<double>(m.mla.qk_rope_head_dim);
    q_dim_      = heads * (latent + rope); // queries absorbed into the latent space
    kv_elems_   = latent + rope;           // not split: every tp rank caches the whole latent
    pair_flops_ = 2 * heads * (2 * latent + rope);
  } else {
    q_dim_      = heads * static_cast<double>(m.head_dim());
    kv_elems_   = 2.0 * static_cast<double>(c.kv_heads_per_rank(m) * m.head_dim());
    pair_flops_ = 4 * q_dim_;
  }
  out_dim_        = static_cast<double>(m.attn_out_dim()) / tp_; // MLA: heads x v_head_dim, not the latent queries
  ffn_            = static_cast<double>(m.ffn_hidden) / tp_;
  vocab_          = static_cast<double>(m.vocab) / tp_;
  e_              = c.act_bytes();
  wb_             = c.weight_bytes();
  kvb_            = c.kv_bytes();
  mlp_mats_       = m.mlp == MlpKind::swiglu ? 3 : 2;
  moe_share_      = m.moe.enabled() ? static_cast<double>(m.moe_layers()) / static_cast<double>(m.layers) : 0.0;
  windowed_share_ = static_cast<double>(m.windowed_layers()) / static_cast<double>(m.layers);
}

double InferenceKernels::kv_bytes_per_token() const { return static_cast<double>(m_.layers) * kv_elems_ * kvb_; }

double InferenceKernels::attention_weights() const
{
  if (!m_.mla.enabled())
    return h_ * (q_dim_ + kv_elems_) + out_dim_ * h_;
  // Down-projections replicated on every rank, up-projections and output split by heads.
  return m_.mla_down_params() + m_.mla_up_params() / tp_;
}

double InferenceKernels::experts_touched(double tokens) const
{
  double E = static_cast<double>(m_.moe.experts), k = static_cast<double>(m_.moe.top_k);
  return E * (1.0 - std::pow(1.0 - k / E, tokens));
}

double InferenceKernels::layer_weight_bytes() const
{
  double dense = mlp_mats_ * h_ * ffn_;
  double moe   = 0;
  if (m_.moe.enabled()) {
    const MoeSpec& x = m_.moe;
    moe              = static_cast<double>(x.experts) * mlp_mats_ * h_ * static_cast<double>(x.expert_ffn) /
              expert_div_ + // E/ep whole or E split by tp
          static_cast<double>(x.shared_experts) * mlp_mats_ * h_ * static_cast<double>(x.shared_ffn) / tp_ +
          h_ * static_cast<double>(x.experts);
  }
  return (attention_weights() + (1 - moe_share_) * dense + moe_share_ * moe) * wb_;
}

double InferenceKernels::weight_bytes() const
{
  // Embedding and head stay in 16 bits (quantizers leave them alone), split by tp.
  double table = h_ * vocab_ * e_;
  return static_cast<double>(m_.layers) * layer_weight_bytes() + table * (m_.tied_embeddings ? 1 : 2);
}

double InferenceKernels::mlp_inner_width() const
{
  double inner = moe_share_ < 1 ? ffn_ : 0.0;
  if (m_.moe.enabled())
    inner = std::max(inner, static_cast<double>(m_.moe.top_k * m_.moe.expert_ffn) / tp_);
  return inner;
}

double InferenceKernels::activation_bytes(int64_t tokens, int64_t seqs, int64_t longest_context) const
{
  double t = static_cast<double>(tokens);
  // Residual stream, qkv output and the MLP's intermediate are alive together at most;
  // logits of the sampled rows in fp32.
  double inner = mlp_inner_width();
  double bytes =
      t * e_ * (2 * h_ + q_dim_ + kv_elems_ + (mlp_mats_ - 1) * inner) + static_cast<double>(seqs) * vocab_ * 4;
  if (!c_.flash_attention)
    bytes += t * static_cast<double>(m_.heads / c_.tp) * static_cast<double>(longest_context) * e_;
  return bytes;
}

double InferenceKernels::activation_bytes(int64_t tokens, int64_t seqs, int64_t longest_context, int64_t parts) const
{
  if (parts <= 1)
    return activation_bytes(tokens, seqs, longest_context);
  int64_t part_tokens = (tokens + parts - 1) / parts, part_seqs = (seqs + parts - 1) / parts;
  return activation_bytes(part_tokens, part_seqs, longest_context) + gpu_residual_bytes(tokens - part_tokens);
}

KernelCost InferenceKernels::gemm(const std::string& name, double tokens, double in, double out) const
{
  KernelCost k;
  k.name   = name;
  k.kclass = KernelClass::gemm;
  k.dtype  = c_.gemm_dtype();
  k.flops  = 2 * tokens * in * out;
  k.bytes  = in * out * wb_ + tokens * (in + out) * e_;
  k.shape  = gemm_shape(tokens, out, in);
  return k;
}

KernelCost InferenceKernels::mlp(double T, double routed) const
{
  KernelCost dense = gemm("mlp", T, h_, mlp_mats_ * ffn_);
  dense.bytes += (mlp_mats_ - 1) * T * ffn_ * e_ + T * h_ * e_ + 2 * T * h_ * e_; // second GEMM's in/out, norm
  dense.flops = 2 * T * mlp_mats_ * h_ * ffn_;
  if (!m_.moe.enabled())
    return dense;
  // Router, the routed pairs through their experts' GEMMs, the shared experts.
  // Expert parallelism: each GPU holds E / ep whole experts and computes the pairs routed
  // to them (an even 1 / ep of all): summed by the layer's all-reduce (ep = tp) or sent
  // back by all-to-all (attention data parallelism).
  const MoeSpec& x = m_.moe;
  const double ep = static_cast<double>(c_.ep), split = c_.ep > 1 ? 1.0 : tp_; // tensor split of an expert
  double fe = static_cast<double>(x.expert_ffn) / split,
         fs = static_cast<double>(x.shared_experts * x.shared_ffn) / tp_;
  double E = static_cast<double>(x.experts), pairs = routed * static_cast<double>(x.top_k) / ep,
         touched = experts_touched(routed) / ep;
  KernelCost moe = gemm("mlp", pairs, h_, mlp_mats_ * fe);
  moe.flops      = 2 * T * h_ * E + 2 * pairs * mlp_mats_ * h_ * fe + 2 * T * mlp_mats_ * h_ * fs;
  moe.bytes      = (touched * mlp_mats_ * h_ * fe + h_ * E + mlp_mats_ * h_ * fs) * wb_ +
              (pairs * (2 * h_ + mlp_mats_ * fe) + T * (4 * h_ + mlp_mats_ * fs)) * e_ + T * E * 4;
  moe.shape = gemm_shape(pairs / std::max(touched, 1.0), mlp_mats_ * fe, h_, std::max(touched, 1.0));
  if (moe_share_ >= 1)
    return moe;
  KernelCost mean = moe_share_ >= 0.5 ? moe : dense;
  mean.flops      = (1 - moe_share_) * dense.flops + moe_share_ * moe.flops;
  mean.bytes      = (1 - moe_share_) * dense.bytes + moe_share_ * moe.bytes;
  return mean;
}

IterationKernels InferenceKernels::plan(const std::vector<SeqWork>& batch) const
{
  IterationKernels it;
  double T = 0, sampled = 0, pairs = 0, kv_tokens = 0, scores = 0, cached_pairs = 0, cached = 0, cached_q = 0;
  int64_t longest = 0;
  // Sliding-window layers: the query at position p sees min(p, window) keys.
  const double window = static_cast<double>(m_.sliding_window);
  double pairs_w = 0, kv_tokens_w = 0;
  bool decodes = false; // a sequence's one new token over its cache: a decode kernel's reads
  for (const SeqWork& w : batch) {
    double q = static_cast<double>(w.tokens), c = static_cast<double>(w.context);
    decodes = decodes || (w.tokens == 1 && w.context > 0);
    if (window > 0) {
      double p0 = c + 1, p1 = c + q; // positions of the first and last query
      if (p1 <= window)
        pairs_w += (p0 + p1) * q / 2;
      else if (p0 >= window)
        pairs_w += q * window;
      else
        pairs_w += (p0 + window) * (window - p0 + 1) / 2 + (p1 - window) * window;
      kv_tokens_w += std::min(c + q, q - 1 + window);
    }
    T += q;
    cached_pairs += q * c;
    cached += c;
    cached_q += c > 0 ? q : 0;
    sampled += w.samples ? 1 : 0;
    pairs += q * c + q * (q + 1) / 2; // causal: query j sees c + j + 1 keys
    kv_tokens += c + q;
    scores += q * (c + q);
    longest = std::max(longest, w.context + w.tokens);
  }
  // Attention data parallelism: the rank's group runs a d-th of the replica's batch; the
  // experts see every group's tokens.
  const double routed = T;
  for (double* x :
       {&T, &sampled, &pairs, &kv_tokens, &scores, &cached_pairs, &cached, &cached_q, &pairs_w, &kv_tokens_w})
    *x /= dp_;
  it.tokens       = static_cast<int64_t>(std::ceil(T));
  LayerKernels& L = it.layer;
  L.qkv = gemm("qkv", T, h_, (attention_weights() - out_dim_ * h_) / h_); // every weight but the output projection's
  L.qkv.bytes += 2 * T * h_ * e_;                                         // input norm
  L.attn.name   = "attn";
  L.attn.kclass = KernelClass::attention;
  L.attn.dtype  = c_.act_dtype;
  // A fused decode kernel (FlashAttention's, FlashInfer's) reading the cache in GPU memory:
  // its reads stream at what such kernels achieve (KernelTiming). Not unfused attention
  // (its scores' traffic) nor FlexGen's over KV fetched or left on the host.
  if (decodes && c_.flash_attention && !c_.kv_off.any())
    L.attn.family = kvb_ < 2 ? KernelFamily::kv_read_fp8 : KernelFamily::kv_read;
  // QK^T and AV: 2 FLOPs per multiply-add, head_dim per query-key pair and head.
  // The mean layer: windowed layers in proportion.
  L.attn.flops      = pair_flops_ * ((1 - windowed_share_) * pairs + windowed_share_ * pairs_w);
  L.kv_read_bytes   = ((1 - windowed_share_) * kv_tokens + windowed_share_ * kv_tokens_w) * kv_elems_ * kvb_;
  L.cached_pairs    = cached_pairs;
  L.cached_kv_bytes = cached * kv_elems_ * kvb_;
  L.cached_queries  = cached_q;
  L.attn.bytes      = L.kv_read_bytes + T * kv_elems_ * kvb_ + 2 * T * q_dim_ * e_;
  if (!c_.flash_attention) // scores written, read by softmax, probabilities written and read
    L.attn.bytes += 4 * scores * static_cast<double>(m_.heads / c_.tp) * e_;
  L.proj = gemm("proj", T, out_dim_, h_);
  L.mlp  = mlp(T, routed);
  if (c_.tp > 1)
    L.allreduce_bytes = T * h_ * e_;
  if (dp_ > 1) {
    const double pairs = routed * static_cast<double>(m_.moe.top_k) / static_cast<double>(c_.ep);
    L.combine_bytes    = pairs * h_ * e_;
    L.dispatch_bytes   = c_.gemm_dtype() == Dtype::fp8 ? pairs * h_ * fp8_block_scaled_bytes : L.combine_bytes;
    if (c_.tp > 1)
      L.moe_gather_bytes = T * h_ * e_;
  }
  it.embed.name   = "embed";
  it.embed.kclass = KernelClass::elementwise;
  it.embed.dtype  = Dtype::fp32;
  it.embed.bytes  = 2 * T * h_ * e_;
  it.embed.flops  = T * h_;
  it.head         = gemm("head", sampled, h_, vocab_);
  it.head.dtype   = c_.act_dtype;
  it.head.bytes   = h_ * vocab_ * e_ + sampled * (h_ * e_ + vocab_ * 4);
  if (c_.tp > 1)
    it.logits_gather_bytes = sampled * static_cast<double>(m_.vocab) * 4;
  it.activation_bytes = activation_bytes(it.tokens, static_cast<int64_t>(std::ceil(sampled)), longest);
  engine_->plan(m_, c_, batch, it);
  return it;
}

} // namespace memwall

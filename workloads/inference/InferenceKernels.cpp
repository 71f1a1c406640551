#include "InferenceKernels.hpp"

#include <algorithm>

namespace memwall {

InferenceKernels::InferenceKernels(const ModelSpec& m, const InferenceConfig& c) : m_(m), c_(c)
{
  tp_       = static_cast<double>(c.tp);
  h_        = static_cast<double>(m.hidden);
  q_dim_    = static_cast<double>(m.heads / c.tp * m.head_dim());
  kv_dim_   = static_cast<double>(c.kv_heads_per_rank(m) * m.head_dim());
  ffn_      = static_cast<double>(m.ffn_hidden) / tp_;
  vocab_    = static_cast<double>(m.vocab) / tp_;
  e_        = c.act_bytes();
  wb_       = c.weight_bytes();
  kvb_      = c.kv_bytes();
  mlp_mats_ = m.mlp == MlpKind::swiglu ? 3 : 2;
}

double InferenceKernels::kv_bytes_per_token() const
{
  return 2.0 * static_cast<double>(m_.layers) * kv_dim_ * kvb_;
}

double InferenceKernels::layer_weight_bytes() const
{
  return (h_ * (q_dim_ + 2 * kv_dim_) + q_dim_ * h_ + mlp_mats_ * h_ * ffn_) * wb_;
}

double InferenceKernels::weight_bytes() const
{
  // Embedding and head stay in 16 bits (quantizers leave them alone), split by tp.
  double table = h_ * vocab_ * e_;
  return static_cast<double>(m_.layers) * layer_weight_bytes() + table * (m_.tied_embeddings ? 1 : 2);
}

double InferenceKernels::activation_bytes(int64_t tokens, int64_t seqs, int64_t longest_context) const
{
  double t = static_cast<double>(tokens);
  // Residual stream, qkv output and the MLP's intermediate are alive together at most;
  // logits of the sampled rows in fp32.
  double bytes = t * e_ * (2 * h_ + q_dim_ + 2 * kv_dim_ + (mlp_mats_ - 1) * ffn_) + static_cast<double>(seqs) * vocab_ * 4;
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

IterationKernels InferenceKernels::plan(const std::vector<SeqWork>& batch) const
{
  IterationKernels it;
  double T = 0, sampled = 0, pairs = 0, kv_tokens = 0, scores = 0, cached_pairs = 0, cached = 0, cached_q = 0;
  int64_t longest = 0;
  for (const SeqWork& w : batch) {
    double q = static_cast<double>(w.tokens), c = static_cast<double>(w.context);
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
  it.tokens = static_cast<int64_t>(T);
  LayerKernels& L = it.layer;
  L.qkv = gemm("qkv", T, h_, q_dim_ + 2 * kv_dim_);
  L.qkv.bytes += 2 * T * h_ * e_; // input norm
  L.attn.name   = "attn";
  L.attn.kclass = KernelClass::attention;
  L.attn.dtype  = c_.act_dtype;
  // QK^T and AV: 2 FLOPs per multiply-add, head_dim per query-key pair and head.
  L.attn.flops    = 4 * pairs * q_dim_;
  L.kv_read_bytes = kv_tokens * 2 * kv_dim_ * kvb_;
  L.cached_pairs    = cached_pairs;
  L.cached_kv_bytes = cached * 2 * kv_dim_ * kvb_;
  L.cached_queries  = cached_q;
  L.attn.bytes    = L.kv_read_bytes + T * 2 * kv_dim_ * kvb_ + 2 * T * q_dim_ * e_;
  if (!c_.flash_attention) // scores written, read by softmax, probabilities written and read
    L.attn.bytes += 4 * scores * static_cast<double>(m_.heads / c_.tp) * e_;
  L.proj = gemm("proj", T, q_dim_, h_);
  L.mlp  = gemm("mlp", T, h_, mlp_mats_ * ffn_);
  L.mlp.bytes += (mlp_mats_ - 1) * T * ffn_ * e_ + T * h_ * e_ + 2 * T * h_ * e_; // second GEMM's in/out, norm
  L.mlp.flops = 2 * T * mlp_mats_ * h_ * ffn_;
  if (c_.tp > 1)
    L.allreduce_bytes = T * h_ * e_;
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
  it.activation_bytes = activation_bytes(it.tokens, static_cast<int64_t>(sampled), longest);
  return it;
}

} // namespace memwall

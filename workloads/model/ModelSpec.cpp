#include "workloads/model/ModelSpec.hpp"

namespace memwall {

int64_t ModelSpec::moe_layers() const
{
  int64_t n = 0;
  for (int64_t l = 0; l < layers; ++l)
    n += moe_layer(l) ? 1 : 0;
  return n;
}

int64_t ModelSpec::windowed_layers() const
{
  int64_t n = 0;
  for (int64_t l = 0; l < layers; ++l)
    n += windowed_layer(l) ? 1 : 0;
  return n;
}

double ModelSpec::attention_params() const
{
  double h = static_cast<double>(hidden);
  double q = static_cast<double>(q_dim()), o = static_cast<double>(attn_out_dim());
  double w = 0, b = 0;
  if (mla.enabled()) {
    w = mla_down_params() + mla_norm_params() + mla_up_params();
  } else {
    double kv = static_cast<double>(kv_dim());
    w         = h * q + 2 * h * kv + o * h; // Q, K and V, output projection
    b         = (qkv_bias ? q + 2 * kv : 0.0) + (proj_bias ? h : 0.0);
  }
  if (qk_norm)
    w += 2.0 * head_dim();
  if (attention_sinks)
    w += static_cast<double>(heads);
  return w + b;
}

// DeepSeek-V2 §2.1: W^DQ and W^DKV with the shared rotary key W^KR; the latents' norms;
// W^UQ (or W^Q without a query bottleneck), W^UK and W^UV, W^O.
double ModelSpec::mla_down_params() const
{
  double h = static_cast<double>(hidden), ql = static_cast<double>(mla.q_lora_rank);
  return (ql > 0 ? h * ql : 0.0) + h * static_cast<double>(mla.kv_lora_rank + mla.qk_rope_head_dim);
}

double ModelSpec::mla_norm_params() const { return static_cast<double>(mla.q_lora_rank + mla.kv_lora_rank); }

double ModelSpec::mla_up_params() const
{
  double h = static_cast<double>(hidden), ql = static_cast<double>(mla.q_lora_rank);
  double up_kv = static_cast<double>(heads) * static_cast<double>(mla.qk_nope_head_dim + mla.v_head_dim);
  return (ql > 0 ? ql : h) * static_cast<double>(q_dim()) + static_cast<double>(mla.kv_lora_rank) * up_kv +
         static_cast<double>(attn_out_dim()) * h;
}

namespace {
// A gated (3 matrices) or plain (2) MLP of inner size f.
double mlp_of(double h, double f, MlpKind kind, bool biases)
{
  double matrices = kind == MlpKind::swiglu ? 3.0 : 2.0;
  double b        = biases ? (matrices - 1) * f + h : 0.0;
  return matrices * h * f + b;
}
} // namespace

double ModelSpec::mlp_params() const
{
  return mlp_of(static_cast<double>(hidden), static_cast<double>(ffn_hidden), mlp, mlp_bias);
}

double ModelSpec::expert_params() const
{
  return mlp_of(static_cast<double>(hidden), static_cast<double>(moe.expert_ffn), mlp, moe.expert_biases);
}

double ModelSpec::shared_expert_params() const
{
  double one = mlp_of(static_cast<double>(hidden), static_cast<double>(moe.shared_ffn), mlp, moe.expert_biases);
  return static_cast<double>(moe.shared_experts) * one + (moe.shared_expert_gate ? 1.0 * hidden : 0.0);
}

double ModelSpec::router_params() const
{
  return static_cast<double>(moe.experts) * hidden + (moe.router_bias ? 1.0 * moe.experts : 0.0);
}

double ModelSpec::layer_params(int64_t layer) const
{
  double common = attention_params() + layer_norm_params();
  if (!moe_layer(layer))
    return common + mlp_params();
  return common + router_params() + shared_expert_params() + static_cast<double>(moe.experts) * expert_params();
}

double ModelSpec::active_layer_params(int64_t layer) const
{
  if (!moe_layer(layer))
    return layer_params(layer);
  return attention_params() + layer_norm_params() + router_params() + shared_expert_params() +
         static_cast<double>(moe.top_k) * expert_params();
}

double ModelSpec::embedding_params() const
{
  double h = static_cast<double>(hidden);
  double e = static_cast<double>(vocab) * h;
  if (learned_positions)
    e += static_cast<double>(max_seq_len + position_offset) * h;
  return e;
}

double ModelSpec::total_params() const
{
  double p =
      embedding_params() + (final_norm ? norm_params() : 0.0) + head_params() + static_cast<double>(extra_params);
  for (int64_t l = 0; l < layers; ++l)
    p += layer_params(l);
  return p;
}

double ModelSpec::active_params() const
{
  double p =
      embedding_params() + (final_norm ? norm_params() : 0.0) + head_params() + static_cast<double>(extra_params);
  for (int64_t l = 0; l < layers; ++l)
    p += active_layer_params(l);
  return p;
}

} // namespace memwall

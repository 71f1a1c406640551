#include "ModelSpec.hpp"

namespace memwall {

double ModelSpec::attention_params() const
{
  double h = static_cast<double>(hidden);
  double kv = static_cast<double>(kv_dim());
  double w = h * h * 2 + 2 * h * kv; // Q and output projection, K and V
  double b = biases ? 2 * h + 2 * kv : 0.0;
  return w + b;
}

double ModelSpec::mlp_params() const
{
  double h = static_cast<double>(hidden);
  double f = static_cast<double>(ffn_hidden);
  double matrices = mlp == MlpKind::swiglu ? 3.0 : 2.0;
  double b        = biases ? (matrices - 1) * f + h : 0.0;
  return matrices * h * f + b;
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
  return embedding_params() + layers * layer_params() + (final_norm ? norm_params() : 0.0) + head_params() +
         static_cast<double>(extra_params);
}

} // namespace memwall

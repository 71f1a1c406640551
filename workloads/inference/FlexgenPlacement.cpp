#include "workloads/inference/FlexgenPlacement.hpp"

#include <vector>

namespace memwall {
namespace {

// Adds each tensor's elements to the part of the device its midpoint falls on.
void place(const std::vector<double>& sizes, double disk_pct, double cpu_pct, double& disk, double& cpu, double& all)
{
  double total = 0;
  for (double s : sizes)
    total += s;
  double cum = 0;
  for (double s : sizes) {
    cum += s;
    double mid = (cum - s / 2) / total * 100;
    if (mid < disk_pct)
      disk += s;
    else if (mid < disk_pct + cpu_pct)
      cpu += s;
  }
  all += total;
}

} // namespace

OffShares flexgen_weight_placement(const ModelSpec& m, double cpu_pct, double disk_pct)
{
  double h                 = static_cast<double>(m.hidden);
  double q                 = static_cast<double>(m.q_dim());
  double kv                = static_cast<double>(m.kv_dim());
  double out               = static_cast<double>(m.attn_out_dim());
  double norm_elems        = m.norm == NormKind::layernorm ? 2 * h : h;
  auto bias                = [](bool on, double n) { return on ? n : 0.0; };
  std::vector<double> attn = {h * q,     bias(m.qkv_bias, q),  h * kv,  bias(m.qkv_bias, kv),
                              h * kv,    bias(m.qkv_bias, kv), out * h, bias(m.proj_bias, h),
                              norm_elems};
  double ffn               = static_cast<double>(m.ffn_hidden);
  std::vector<double> mlp;
  int experts = m.moe.enabled() ? static_cast<int>(m.moe.experts) : 1;
  if (m.moe.enabled())
    ffn = static_cast<double>(m.moe.expert_ffn);
  for (int e = 0; e < experts; ++e) {
    if (m.mlp == MlpKind::swiglu)
      mlp.insert(mlp.end(), {ffn * h, ffn * h, h * ffn});
    else
      mlp.insert(mlp.end(), {h * ffn, bias(m.mlp_bias, ffn), ffn * h, bias(m.mlp_bias, h)});
  }
  mlp.push_back(norm_elems);
  double disk = 0, cpu = 0, all = 0;
  place(attn, disk_pct, cpu_pct, disk, cpu, all);
  place(mlp, disk_pct, cpu_pct, disk, cpu, all);
  OffShares s;
  s.cpu  = cpu / all;
  s.nvme = disk / all;
  return s;
}

} // namespace memwall

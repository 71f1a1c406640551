#include "hwmodels/ProfileScaling.hpp"

#include <cstdio>
#include <memory>

namespace memwall {
namespace {

std::string times(double ratio)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "x%.2f", ratio);
  return buf;
}

void scale_bandwidths(LatencyBandwidthCurve& c, double ratio)
{
  for (Regime& r : c.regimes)
    r.bandwidth *= ratio;
}

} // namespace

std::string ProfileScale::text() const
{
  std::string out;
  for (const auto& [d, ratio] : compute)
    out += (out.empty() ? "" : ", ") + std::string(dtype_name(d)) + " peak " + times(ratio);
  if (memory != 1)
    out += (out.empty() ? "" : ", ") + std::string("HBM ") + times(memory);
  return out;
}

ProfileScale profile_scale(const GpuProfile& p, const GpuSpec& measured, const GpuSpec& gpu)
{
  ProfileScale s;
  auto note = [&](Dtype d) {
    double was = measured.peak(d), now = gpu.peak(d);
    if (was > 0 && now > 0 && now != was)
      s.compute[d] = now / was;
  };
  for (const auto& [d, model] : p.gemm)
    note(d);
  for (const auto& [key, model] : p.gemm_passes)
    note(key.first);
  if (measured.hbm_achievable_bw > 0 && gpu.hbm_achievable_bw != measured.hbm_achievable_bw)
    s.memory = gpu.hbm_achievable_bw / measured.hbm_achievable_bw;
  return s;
}

GpuProfile scaled_profile(const GpuProfile& p, const ProfileScale& s)
{
  GpuProfile out = p;
  auto scale     = [&](Dtype d, GemmModel& m) {
    if (auto it = s.compute.find(d); it != s.compute.end())
      m.peak_flops *= it->second;
    m.bandwidth *= s.memory;
  };
  // A table's corrections are measured time over the model it was fitted with (the one
  // GpuProfile::gemm_time times its pass by): kept against that model, so that they
  // multiply the scaled one.
  for (auto& [key, table] : out.gemm_tables)
    if (const GemmModel* fitted = p.gemm_model(key.first, 0, key.second))
      table.reference = std::make_shared<GemmModel>(*fitted);
  for (auto& [d, m] : out.gemm)
    scale(d, m);
  for (auto& [key, m] : out.gemm_passes)
    scale(key.first, m);
  scale_bandwidths(out.elementwise, s.memory);
  for (auto& [family, curve] : out.elementwise_families)
    scale_bandwidths(curve, s.memory);
  out.scaled = s.text();
  return out;
}

} // namespace memwall

// What a GPU's profile answers (GpuProfile.hpp): its GEMM models and tables by dtype and
// pass, borrowed from another dtype where it measured none, and its curves. Its YAML:
// GpuProfileYaml.cpp.
#include "hwmodels/profile/GpuProfile.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {

const std::vector<std::string>& copy_kinds()
{
  // bidir_pinned: an h2d and a d2h copy of the size at once (bytes: both); managed_fault:
  // managed memory migrated to the GPU by first-touch faults; managed_prefetch: by
  // cudaMemPrefetchAsync.
  static const std::vector<std::string> k{"h2d_pinned", "d2h_pinned",   "h2d_pageable",  "d2h_pageable",
                                          "peer",       "bidir_pinned", "managed_fault", "managed_prefetch"};
  return k;
}

const std::vector<std::string>& collective_kinds()
{
  static const std::vector<std::string> k{"all_reduce", "all_gather", "reduce_scatter", "send_recv"};
  return k;
}

std::optional<Dtype> GpuProfile::lender(Dtype d) const
{
  auto measured = [&](Dtype x) {
    if (gemm.count(x))
      return true;
    for (const auto& [key, m] : gemm_passes)
      if (key.first == x)
        return true;
    return false;
  };
  if (measured(d))
    return d;
  for (Dtype pref : {Dtype::bf16, Dtype::fp16})
    if (measured(pref))
      return pref;
  if (!gemm.empty())
    return gemm.begin()->first;
  if (!gemm_passes.empty())
    return gemm_passes.begin()->first.first;
  return std::nullopt;
}

namespace {

// The model a measured dtype has for `pass` (-1: any pass): the pass's own, else the
// dtype's, else (measured pass by pass only) its forward model.
const GemmModel* own_model(const GpuProfile& p, Dtype d, int pass)
{
  if (pass >= 0)
    if (auto it = p.gemm_passes.find({d, static_cast<GemmPass>(pass)}); it != p.gemm_passes.end())
      return &it->second;
  if (auto it = p.gemm.find(d); it != p.gemm.end())
    return &it->second;
  if (auto it = p.gemm_passes.find({d, GemmPass::forward}); it != p.gemm_passes.end())
    return &it->second;
  return nullptr;
}

} // namespace

const GemmModel* GpuProfile::gemm_model(Dtype d, double peak) const
{
  if (const GemmModel* own = own_model(*this, d, -1))
    return own;
  std::optional<Dtype> from = lender(d);
  if (!from || peak <= 0)
    return nullptr;
  auto key = std::make_tuple(d, -1, peak);
  if (auto it = borrowed_.find(key); it != borrowed_.end())
    return &it->second;
  GemmModel m     = *own_model(*this, *from, -1);
  m.peak_flops    = peak;
  m.element_bytes = dtype_bytes(d);
  return &borrowed_.emplace(key, m).first->second;
}

const GemmModel* GpuProfile::gemm_model(Dtype d, double peak, GemmPass p) const
{
  int pass = static_cast<int>(p);
  if (const GemmModel* own = own_model(*this, d, pass))
    return own;
  std::optional<Dtype> from = lender(d);
  if (!from || peak <= 0)
    return nullptr;
  auto key = std::make_tuple(d, pass, peak);
  if (auto it = borrowed_.find(key); it != borrowed_.end())
    return &it->second;
  GemmModel m     = *own_model(*this, *from, pass);
  m.peak_flops    = peak;
  m.element_bytes = dtype_bytes(d);
  return &borrowed_.emplace(key, m).first->second;
}

const GemmTable* GpuProfile::gemm_table(Dtype d, double peak, GemmPass p) const
{
  if (auto it = gemm_tables.find({d, p}); it != gemm_tables.end())
    return &it->second;
  std::optional<Dtype> from = lender(d);
  if (!from || *from == d)
    return nullptr;
  auto it            = gemm_tables.find({*from, p});
  const GemmModel* m = own_model(*this, *from, static_cast<int>(p));
  // Measured times stand for another dtype only on the same units at the same element size.
  if (it == gemm_tables.end() || !m || dtype_bytes(*from) != dtype_bytes(d))
    return nullptr;
  // At the lender's peak, or, where the profile was scaled to another, at the peak it
  // measured (a dtype left as measured beside a changed one): its corrections hold.
  bool measured_peak = it->second.reference && it->second.reference->peak_flops == peak;
  if (m->peak_flops != peak && !measured_peak)
    return nullptr;
  return &it->second;
}

bool GpuProfile::has_pass_data(Dtype d, double peak) const
{
  std::optional<Dtype> from = lender(d);
  if (!from)
    return false;
  for (GemmPass p : {GemmPass::forward, GemmPass::input_grad, GemmPass::weight_grad})
    if (gemm_passes.count({*from, p}) || gemm_table(d, peak, p))
      return true;
  return false;
}

double GpuProfile::gemm_time(Dtype d, double peak, GemmPass p, double m, double n, double k, double groups) const
{
  const GemmModel* model = gemm_model(d, peak, p);
  if (!model)
    return -1;
  double t = model->time(m, n, k, groups);
  if (groups == 1)
    if (const GemmTable* table = gemm_table(d, peak, p))
      if (double c = table->correction(table->reference ? *table->reference : *model, m, n, k); c > 0)
        t *= c;
  return t;
}

const CollectiveCurve* GpuProfile::collective(const std::string& kind, int ranks, int ranks_per_node) const
{
  for (const CollectiveCurve& c : collectives)
    if (c.kind == kind && c.ranks == ranks && c.ranks_per_node == ranks_per_node)
      return &c;
  return nullptr;
}

const LatencyBandwidthCurve& GpuProfile::elementwise_curve(KernelFamily f) const
{
  auto it = elementwise_families.find(f);
  return it == elementwise_families.end() ? elementwise : it->second;
}

} // namespace memwall

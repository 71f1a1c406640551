#include "GpuProfile.hpp"

#include "ParamReader.hpp"
#include "TextFile.hpp"

#include <algorithm>
#include <cmath>
#include <yaml-cpp/yaml.h>

namespace memwall {
namespace {

constexpr QuantityKind K_s = QuantityKind::seconds;

LatencyBandwidthCurve read_curve(ParamReader& parent, const std::string& key, const std::string& desc)
{
  YAML::Node n = parent.take(key, "list of {upto_bytes, latency_s, bandwidth}", desc, "none");
  LatencyBandwidthCurve c;
  if (!n.IsDefined() || n.IsNull())
    return c;
  if (!n.IsSequence() || n.size() == 0)
    parent.fail(key, "expected a non-empty list of regimes {upto_bytes, latency_s, bandwidth}");
  for (size_t i = 0; i < n.size(); ++i) {
    ParamReader r(n[i], parent.file(), parent.path() + "." + key + "[" + std::to_string(i) + "]");
    Regime g;
    std::string last = i + 1 == n.size() ? "inf" : "";
    YAML::Node up    = r.take("upto_bytes", "bytes or inf", "largest size of the regime (inf: any)");
    if (up.IsDefined() && up.IsScalar() && up.Scalar() == "inf")
      g.upto_bytes = INFINITY;
    else
      g.upto_bytes = r.required_quantity("upto_bytes", QuantityKind::bytes, "largest size of the regime");
    g.latency_s = r.required_quantity("latency_s", K_s, "fixed time of an operation in the regime");
    g.bandwidth = r.required_quantity("bandwidth", QuantityKind::rate, "bytes per second in the regime");
    if (g.bandwidth <= 0)
      r.fail("bandwidth", "must be positive");
    if (!c.regimes.empty() && g.upto_bytes <= c.regimes.back().upto_bytes)
      r.fail("upto_bytes", "regimes must be in ascending order of upto_bytes");
    r.finish();
    c.regimes.push_back(g);
  }
  return c;
}

GemmModel read_gemm(ParamReader& r)
{
  GemmModel g;
  g.peak_flops    = r.required_quantity("peak_flops", QuantityKind::flop_rate, "datasheet dense peak of the dtype");
  g.sms           = static_cast<int>(r.required_integer("sms", "streaming multiprocessors", 1));
  g.element_bytes = r.number("element_bytes", 2, "bytes per operand element");
  g.launch_s      = r.required_quantity("launch_s", K_s, "launch and tail time of one GEMM");
  g.efficiency    = r.required_number("efficiency", "fraction of peak reached in big tiles");
  g.bandwidth     = r.required_quantity("bandwidth", QuantityKind::rate, "operand streaming bandwidth");
  g.small_tile_efficiency = r.required_number("small_tile_efficiency", "rate of 64x128 tiles relative to big tiles");
  g.blend         = r.required_number("blend", "p-norm exponent combining compute and memory time", 1);
  g.k_overhead    = r.required_number("k_overhead", "tile prologue and epilogue, in K iterations");
  if (g.efficiency <= 0 || g.efficiency > 1)
    r.fail("efficiency", "must lie in (0, 1]");
  if (g.small_tile_efficiency <= 0 || g.small_tile_efficiency > 1)
    r.fail("small_tile_efficiency", "must lie in (0, 1]");
  if (g.bandwidth <= 0 || g.peak_flops <= 0)
    r.fail("bandwidth", "bandwidth and peak_flops must be positive");
  r.finish();
  return g;
}

YAML::Node curve_node(const LatencyBandwidthCurve& c)
{
  YAML::Node list(YAML::NodeType::Sequence);
  for (const Regime& g : c.regimes) {
    YAML::Node n;
    n.SetStyle(YAML::EmitterStyle::Flow);
    if (std::isinf(g.upto_bytes))
      n["upto_bytes"] = "inf";
    else
      n["upto_bytes"] = g.upto_bytes;
    n["latency_s"] = g.latency_s;
    n["bandwidth"] = g.bandwidth;
    list.push_back(n);
  }
  return list;
}

} // namespace

const std::vector<std::string>& copy_kinds()
{
  static const std::vector<std::string> k{"h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable", "peer"};
  return k;
}

const std::vector<std::string>& collective_kinds()
{
  static const std::vector<std::string> k{"all_reduce", "all_gather", "reduce_scatter", "send_recv"};
  return k;
}

const GemmModel* GpuProfile::gemm_model(Dtype d, double peak) const
{
  if (auto it = gemm.find(d); it != gemm.end())
    return &it->second;
  if (gemm.empty() || peak <= 0)
    return nullptr;
  if (auto it = borrowed_.find(d); it != borrowed_.end())
    return &it->second;
  const GemmModel* from = nullptr;
  for (Dtype pref : {Dtype::bf16, Dtype::fp16})
    if (!from && gemm.count(pref))
      from = &gemm.at(pref);
  if (!from)
    from = &gemm.begin()->second;
  GemmModel m      = *from;
  m.peak_flops     = peak;
  m.element_bytes  = dtype_bytes(d);
  return &borrowed_.emplace(d, m).first->second;
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

GpuProfile read_profile(const std::string& yaml_text, const std::string& file)
{
  YAML::Node root = parse_yaml(yaml_text, file);
  if (!root.IsMap())
    throw InputError(file + ": a hardware profile must be a YAML mapping (gpu, source, gemm, ...)");
  ParamReader r(root, file, "");
  GpuProfile p;
  p.gpu    = r.required_text("gpu", "catalog id of the GPU the profile was measured on");
  p.source = r.text("source", "", "where the measurements came from");
  p.derived_from =
      r.text("derived_from", "", "catalog id of the GPU whose fitted profile this one scales (empty: its own fit)");
  ParamReader gemm = r.section("gemm", "GEMM model per dtype (fp32, tf32, bf16, fp16, fp8, int8)", "none");
  for (Dtype d : all_dtypes())
    if (gemm.has(dtype_name(d))) {
      ParamReader one = gemm.section(dtype_name(d), std::string("GEMM model of ") + dtype_name(d));
      p.gemm[d] = read_gemm(one);
    }
  gemm.finish();
  p.elementwise = read_curve(r, "elementwise", "memory-bound kernels: launch + bytes / bandwidth");
  ParamReader families =
      r.section("elementwise_families", "memory-bound kernels per family: norm, activation, residual, rope", "none");
  for (KernelFamily f : fitted_kernel_families()) {
    std::string name        = kernel_family_name(f);
    LatencyBandwidthCurve c = read_curve(families, name, name + " kernels");
    if (!c.empty())
      p.elementwise_families[f] = c;
  }
  families.finish();
  ParamReader copies = r.section("copies", "copy curves: h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable, peer", "none");
  for (const std::string& k : copy_kinds()) {
    LatencyBandwidthCurve c = read_curve(copies, k, k + " copies");
    if (!c.empty())
      p.copies[k] = c;
  }
  copies.finish();
  YAML::Node coll = r.take("collectives", "list", "collective curves by kind, ranks and ranks_per_node", "none");
  if (coll.IsDefined() && !coll.IsNull()) {
    if (!coll.IsSequence())
      r.fail("collectives", "expected a list of {kind, ranks, ranks_per_node, regimes}");
    for (size_t i = 0; i < coll.size(); ++i) {
      ParamReader c(coll[i], file, "collectives[" + std::to_string(i) + "]");
      CollectiveCurve cc;
      cc.kind  = c.required_text("kind", "collective kind: all_reduce, all_gather, reduce_scatter, send_recv");
      const auto& kinds = collective_kinds();
      if (std::find(kinds.begin(), kinds.end(), cc.kind) == kinds.end())
        c.fail("kind", "must be one of all_reduce, all_gather, reduce_scatter, send_recv");
      cc.ranks = static_cast<int>(c.required_integer("ranks", "ranks in the group", 2));
      cc.ranks_per_node = static_cast<int>(c.required_integer("ranks_per_node", "ranks of the group in one node", 1));
      cc.curve = read_curve(c, "regimes", "latency and algorithm bandwidth by size");
      if (cc.curve.empty())
        c.fail("regimes", "is required");
      c.finish();
      p.collectives.push_back(cc);
    }
  }
  r.finish();
  return p;
}

GpuProfile load_profile(const std::string& path)
{
  return read_profile(read_text_file(path, "hardware profile"), path);
}

std::string profile_yaml(const GpuProfile& p)
{
  YAML::Emitter out;
  out.SetDoublePrecision(9);
  YAML::Node root;
  root["gpu"]    = p.gpu;
  root["source"] = p.source;
  if (!p.derived_from.empty())
    root["derived_from"] = p.derived_from;
  for (const auto& [d, g] : p.gemm) {
    YAML::Node n;
    n["peak_flops"] = g.peak_flops;
    n["sms"] = g.sms;
    n["element_bytes"] = g.element_bytes;
    n["launch_s"] = g.launch_s;
    n["efficiency"] = g.efficiency;
    n["bandwidth"] = g.bandwidth;
    n["small_tile_efficiency"] = g.small_tile_efficiency;
    n["blend"] = g.blend;
    n["k_overhead"] = g.k_overhead;
    root["gemm"][dtype_name(d)] = n;
  }
  if (!p.elementwise.empty())
    root["elementwise"] = curve_node(p.elementwise);
  for (const auto& [f, c] : p.elementwise_families)
    root["elementwise_families"][kernel_family_name(f)] = curve_node(c);
  for (const auto& [k, c] : p.copies)
    root["copies"][k] = curve_node(c);
  for (const CollectiveCurve& c : p.collectives) {
    YAML::Node n;
    n["kind"] = c.kind;
    n["ranks"] = c.ranks;
    n["ranks_per_node"] = c.ranks_per_node;
    n["regimes"] = curve_node(c.curve);
    root["collectives"].push_back(n);
  }
  out << root;
  return std::string("# memwall hardware profile (memwall calibrate fit). Units: seconds, bytes, bytes/s, FLOP/s.\n") +
         out.c_str() + "\n";
}

} // namespace memwall

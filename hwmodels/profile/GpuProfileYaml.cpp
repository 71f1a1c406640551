// A GPU's profile as YAML (GpuProfile.hpp): read from a fitted profile file, and
// written back, each figure with its unit.
#include "hwmodels/profile/GpuProfile.hpp"

#include "base/ParamReader.hpp"
#include "base/TextFile.hpp"
#include "base/YamlDocument.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
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
  g.blend                 = r.required_number("blend", "p-norm exponent combining compute and memory time", 1);
  g.k_overhead            = r.required_number("k_overhead", "tile prologue and epilogue, in K iterations");
  if (g.efficiency <= 0 || g.efficiency > 1)
    r.fail("efficiency", "must lie in (0, 1]");
  if (g.small_tile_efficiency < GemmModel::min_small_tile_efficiency || g.small_tile_efficiency > 1)
    r.fail("small_tile_efficiency", "must lie in [0.5, 1]");
  if (g.launch_s < GemmModel::min_launch_s || g.launch_s > GemmModel::max_launch_s)
    r.fail("launch_s", "must lie in [0.5 us, 1 ms]");
  if (g.blend > GemmModel::max_blend)
    r.fail("blend", "must lie in [1, 16]");
  if (g.k_overhead > GemmModel::max_k_overhead)
    r.fail("k_overhead", "must lie in [0, 1024]");
  if (g.bandwidth <= 0 || g.peak_flops <= 0)
    r.fail("bandwidth", "bandwidth and peak_flops must be positive");
  r.finish();
  return g;
}

YAML::Node gemm_node(const GemmModel& g)
{
  YAML::Node n;
  n["peak_flops"]            = g.peak_flops;
  n["sms"]                   = g.sms;
  n["element_bytes"]         = g.element_bytes;
  n["launch_s"]              = g.launch_s;
  n["efficiency"]            = g.efficiency;
  n["bandwidth"]             = g.bandwidth;
  n["small_tile_efficiency"] = g.small_tile_efficiency;
  n["blend"]                 = g.blend;
  n["k_overhead"]            = g.k_overhead;
  return n;
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
  p.event_overhead_s = r.number("event_overhead_s", 0,
                                "seconds each event-timed kernel measurement holds beyond the kernel's time on a busy "
                                "stream; taken off every kernel the profile times",
                                0, 1e-3);
  p.launch_gap_s     = r.number("launch_gap_s", 0,
                                "seconds a busy stream idles between two back-to-back kernels; not held by a kernel "
                                    "the host launches slower than the GPU runs it",
                                0, 1e-3);
  ParamReader gemm   = r.section("gemm", "GEMM model per dtype (fp32, tf32, bf16, fp16, fp8, int8)", "none");
  for (Dtype d : all_dtypes())
    if (gemm.has(dtype_name(d))) {
      ParamReader one = gemm.section(dtype_name(d), std::string("GEMM model of ") + dtype_name(d));
      p.gemm[d]       = read_gemm(one);
    }
  gemm.finish();
  ParamReader passes = r.section("gemm_passes", "GEMM model per dtype and pass (fwd, dgrad, wgrad)", "none");
  for (Dtype d : all_dtypes())
    if (passes.has(dtype_name(d))) {
      ParamReader of = passes.section(dtype_name(d), std::string("GEMM models of ") + dtype_name(d) + " by pass");
      for (GemmPass g : {GemmPass::forward, GemmPass::input_grad, GemmPass::weight_grad})
        if (of.has(gemm_pass_name(g))) {
          ParamReader one =
              of.section(gemm_pass_name(g), std::string("GEMM model of the ") + gemm_pass_name(g) + " pass");
          p.gemm_passes[{d, g}] = read_gemm(one);
        }
      of.finish();
    }
  passes.finish();
  ParamReader tables =
      r.section("gemm_tables", "measured GEMM times per dtype: a block of lines PASS A B | TOKENS | TIME_S", "none");
  for (Dtype d : all_dtypes()) {
    YAML::Node block = tables.take(dtype_name(d), "text", "sweeps of measured GEMMs (GemmTable.hpp)", "none");
    if (!block.IsDefined() || block.IsNull())
      continue;
    if (!block.IsScalar())
      tables.fail(dtype_name(d), "expected a block of lines PASS A B | TOKENS ... | TIME_S ...");
    for (auto& [pass, t] : parse_gemm_sweeps(block.Scalar(), tables.location(dtype_name(d))))
      p.gemm_tables[{d, pass}] = std::move(t);
  }
  tables.finish();
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
  ParamReader copies = r.section("copies",
                                 "copy curves: h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable, peer, bidir_pinned, "
                                 "managed_fault, managed_prefetch",
                                 "none");
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
      cc.kind           = c.required_text("kind", "collective kind: all_reduce, all_gather, reduce_scatter, send_recv");
      const auto& kinds = collective_kinds();
      if (std::find(kinds.begin(), kinds.end(), cc.kind) == kinds.end())
        c.fail("kind", "must be one of all_reduce, all_gather, reduce_scatter, send_recv");
      cc.ranks          = static_cast<int>(c.required_integer("ranks", "ranks in the group", 2));
      cc.ranks_per_node = static_cast<int>(c.required_integer("ranks_per_node", "ranks of the group in one node", 1));
      cc.curve          = read_curve(c, "regimes", "latency and algorithm bandwidth by size");
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
  if (p.event_overhead_s > 0)
    root["event_overhead_s"] = p.event_overhead_s;
  if (p.launch_gap_s > 0)
    root["launch_gap_s"] = p.launch_gap_s;
  for (const auto& [d, g] : p.gemm)
    root["gemm"][dtype_name(d)] = gemm_node(g);
  for (const auto& [key, g] : p.gemm_passes)
    root["gemm_passes"][dtype_name(key.first)][gemm_pass_name(key.second)] = gemm_node(g);
  if (!p.elementwise.empty())
    root["elementwise"] = curve_node(p.elementwise);
  for (const auto& [f, c] : p.elementwise_families)
    root["elementwise_families"][kernel_family_name(f)] = curve_node(c);
  for (const auto& [k, c] : p.copies)
    root["copies"][k] = curve_node(c);
  for (const CollectiveCurve& c : p.collectives) {
    YAML::Node n;
    n["kind"]           = c.kind;
    n["ranks"]          = c.ranks;
    n["ranks_per_node"] = c.ranks_per_node;
    n["regimes"]        = curve_node(c.curve);
    root["collectives"].push_back(n);
  }
  out << root;
  // The measured tables as literal blocks, a line per sweep (GemmTable.hpp).
  std::string tables;
  for (Dtype d : all_dtypes()) {
    std::vector<const GemmTable*> of;
    for (const auto& [key, t] : p.gemm_tables)
      if (key.first == d)
        of.push_back(&t);
    if (of.empty())
      continue;
    tables += std::string("  ") + dtype_name(d) + ": |\n";
    std::istringstream lines(gemm_sweeps_text(of));
    for (std::string line; std::getline(lines, line);)
      tables += "    " + line + "\n";
  }
  return std::string("# memwall hardware profile (memwall calibrate fit). Units: seconds, bytes, bytes/s, FLOP/s.\n") +
         out.c_str() + "\n" +
         (tables.empty() ? "" : "gemm_tables:  # per dtype: PASS A B | TOKENS ... | TIME_S ...\n" + tables);
}

} // namespace memwall

// overlay_profile (GpuProfile.hpp): a user's profile laid over the GPU's shipped one.
#include "hwmodels/profile/GpuProfile.hpp"

#include "base/ParamReader.hpp"

#include <algorithm>
#include <set>

namespace memwall {

GpuProfile overlay_profile(const GpuProfile& base, const GpuProfile& top)
{
  GpuProfile p = base;
  p.name       = top.name;
  p.source     = top.source;
  p.derived_from.clear();
  // The top's kernels were measured its way: its overhead where it measured kernels.
  if (!top.gemm.empty() || !top.gemm_passes.empty() || !top.elementwise.empty())
    p.event_overhead_s = top.event_overhead_s, p.launch_gap_s = top.launch_gap_s;
  // A dtype the top measured replaces the base's models and tables of that dtype whole.
  std::set<Dtype> measured;
  for (const auto& [d, g] : top.gemm)
    measured.insert(d);
  for (const auto& [key, g] : top.gemm_passes)
    measured.insert(key.first);
  for (const auto& [key, t] : top.gemm_tables)
    measured.insert(key.first);
  std::vector<std::string> gemm_mine, gemm_kept;
  for (Dtype d : measured) {
    gemm_mine.push_back(dtype_name(d));
    p.gemm.erase(d);
    for (GemmPass g : {GemmPass::forward, GemmPass::input_grad, GemmPass::weight_grad}) {
      p.gemm_passes.erase({d, g});
      p.gemm_tables.erase({d, g});
    }
  }
  for (const auto& [d, g] : base.gemm)
    if (!measured.count(d))
      gemm_kept.push_back(dtype_name(d));
  for (const auto& [d, g] : top.gemm)
    p.gemm[d] = g;
  for (const auto& [key, g] : top.gemm_passes)
    p.gemm_passes[key] = g;
  for (const auto& [key, t] : top.gemm_tables)
    p.gemm_tables[key] = t;
  // Curves by name: the top's replace the base's of the same name.
  std::vector<std::string> curves_mine, curves_kept;
  if (!top.elementwise.empty())
    p.elementwise = top.elementwise;
  (top.elementwise.empty() ? curves_kept : curves_mine).push_back("elementwise");
  for (const auto& [f, c] : top.elementwise_families)
    p.elementwise_families[f] = c;
  for (const auto& [f, c] : p.elementwise_families)
    (top.elementwise_families.count(f) ? curves_mine : curves_kept)
        .push_back(std::string("elementwise.") + kernel_family_name(f));
  for (const auto& [k, c] : top.copies)
    p.copies[k] = c;
  for (const auto& [k, c] : p.copies)
    (top.copies.count(k) ? curves_mine : curves_kept).push_back(k);
  size_t collectives_mine = 0;
  // Curves the base took from a sibling GPU (CollectivesFrom.hpp) give way whole to a
  // user's measured ones: a measurement beats a derivation.
  bool measured_inside = std::any_of(top.collectives.begin(), top.collectives.end(),
                                     [](const CollectiveCurve& c) { return c.inside_node(); });
  if (measured_inside && !base.collectives_from.empty()) {
    std::erase_if(p.collectives, [](const CollectiveCurve& c) { return c.inside_node(); });
    p.collectives_from.clear();
  }
  for (const CollectiveCurve& c : top.collectives) {
    auto same = [&](const CollectiveCurve& b) {
      return b.kind == c.kind && b.ranks == c.ranks && b.ranks_per_node == c.ranks_per_node;
    };
    auto it = std::find_if(p.collectives.begin(), p.collectives.end(), same);
    if (it != p.collectives.end())
      *it = c;
    else
      p.collectives.push_back(c);
    ++collectives_mine;
  }
  auto describe = [](const std::vector<std::string>& gemm, const std::vector<std::string>& curves, size_t collectives) {
    std::vector<std::string> parts;
    if (!gemm.empty())
      parts.push_back("GEMMs " + join(gemm, "/"));
    if (!curves.empty())
      parts.push_back(join(curves, "/"));
    if (collectives > 0)
      parts.push_back(std::to_string(collectives) + " collective curves");
    return join(parts);
  };
  std::string kept = describe(gemm_kept, curves_kept, p.collectives.size() - collectives_mine);
  p.parts          = describe(gemm_mine, curves_mine, collectives_mine) + " from " + top.name;
  if (!kept.empty())
    p.parts += "; " + kept + " from " + base.name;
  return p;
}

} // namespace memwall

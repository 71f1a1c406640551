#include "hwmodels/CollectivesFrom.hpp"

#include "hwmodels/Catalog.hpp"

#include <memory>
#include <set>

namespace memwall {

void take_collectives(GpuSpec& g, const std::string& where)
{
  const std::string& from = g.collectives_from;
  // Taken already at this NVLink bandwidth; a GPU whose nvlink_bw was changed since
  // (an inline mapping on an H200) takes them again at its own.
  if (from.empty() ||
      (g.profile && g.profile->collectives_from == from && g.profile->collectives_nvlink_bw == g.nvlink_bw))
    return;
  auto refuse = [&](const std::string& why) { throw InputError(where + ": collectives_from " + from + ": " + why); };
  auto inside_node = [](const CollectiveCurve& c) { return c.inside_node(); };
  if (g.profile && g.profile->collectives_from.empty())
    for (const CollectiveCurve& c : g.profile->collectives)
      if (inside_node(c))
        refuse("would change nothing: the GPU's profile (" + g.profile->name +
               ") measured its own collectives inside a node");
  if (from == g.id)
    refuse("names the GPU itself; give a GPU whose collectives were measured");
  // A preset naming another that names it back would load forever.
  static thread_local std::set<std::string> taking;
  if (!taking.insert(g.id).second)
    refuse("names a GPU that takes its collectives from " + g.id + "; give a GPU whose collectives were measured");
  struct Done {
    std::string id;
    ~Done() { taking.erase(id); }
  } done{g.id};
  GpuSpec source = gpu_preset(from, where);
  if (!source.collectives_from.empty())
    refuse("takes its own collectives from " + source.collectives_from + "; name that GPU instead");
  if (source.nvlink_bw <= 0)
    refuse("has no NVLink (nvlink_bw 0): no collectives inside a node to take");
  if (g.nvlink_bw <= 0) { // this GPU has none (a PCIe part made of an SXM one): nothing to time
    if (g.profile && g.profile->collectives_from == from) {
      GpuProfile p = *g.profile;
      std::erase_if(p.collectives, inside_node);
      p.collectives_from.clear();
      g.profile = std::make_shared<const GpuProfile>(std::move(p));
    }
    return;
  }
  GpuProfile p = g.profile ? *g.profile : GpuProfile{};
  if (!g.profile) {
    p.gpu  = g.id;
    p.name = "catalog " + g.id;
  }
  std::erase_if(p.collectives, inside_node);
  double ratio = g.nvlink_bw / source.nvlink_bw;
  if (source.profile)
    for (CollectiveCurve c : source.profile->collectives)
      if (inside_node(c)) {
        for (Regime& r : c.curve.regimes)
          r.bandwidth *= ratio;
        p.collectives.push_back(std::move(c));
      }
  if (p.collectives.empty())
    refuse("has no measured collectives inside a node; give a GPU whose profile holds them (memwall list gpus)");
  p.collectives_from      = from;
  p.collectives_nvlink_bw = g.nvlink_bw;
  if (!g.profile)
    p.parts = "NVLink collectives only", p.source = "collectives inside a node: " + from + "'s measured curves x " +
                                                    std::to_string(ratio).substr(0, 5) +
                                                    " (nvlink_bw ratio); kernels and copies: the catalog's estimates";
  g.profile = std::make_shared<const GpuProfile>(std::move(p));
}

} // namespace memwall

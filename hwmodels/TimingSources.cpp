#include "hwmodels/TimingSources.hpp"

#include <algorithm>
#include <cstdio>

namespace memwall {

std::vector<std::pair<std::string, std::string>> timing_sources(const GpuSpec& g)
{
  const GpuProfile* p = g.profile.get();
  // A part the profile holds: its own fit, or a sibling's scaled (the whole profile derived).
  auto fitted = [&](bool holds) {
    return !holds                    ? std::string("estimated")
           : p->derived_from.empty() ? std::string("measured")
                                     : "derived from " + p->derived_from;
  };
  bool gemm               = p && (!p->gemm.empty() || !p->gemm_passes.empty());
  bool kernel             = p && !p->elementwise.empty();
  bool copies             = p && (p->copies.count("h2d_pinned") || p->copies.count("d2h_pinned"));
  bool inside             = p && std::any_of(p->collectives.begin(), p->collectives.end(),
                                             [](const CollectiveCurve& c) { return c.inside_node(); });
  std::string collectives = g.nvlink_bw <= 0                         ? "none"
                            : inside && !p->collectives_from.empty() ? "derived from " + p->collectives_from
                                                                     : fitted(inside);
  // A profile scaled to a GPU changed from the one it measured says so where it scaled
  // what it holds (an estimated part is the catalog's figures, already the GPU's own).
  auto scaled = [&](bool holds, bool compute) {
    std::string source = fitted(holds);
    if (!holds || p->scaled.empty())
      return source;
    bool hbm = p->scaled.find("HBM") != std::string::npos, peak = p->scaled.find("peak") != std::string::npos;
    return (compute ? peak || hbm : hbm) ? source + " (scaled: " + p->scaled + ")" : source;
  };
  const std::vector<std::string>& part = timing_parts();
  // The power limit holds the tensor cores back (sim/timing/PowerGovernor): said with them.
  char limit[64];
  std::snprintf(limit, sizeof limit, " (held under a %.0f W limit)", g.power_limit());
  return {{part[0], scaled(gemm, true) + (g.power_limited() ? limit : "")},
          {part[1], scaled(kernel, false)},
          {part[2], fitted(copies)},
          {part[3], collectives}};
}

const std::vector<std::string>& timing_parts()
{
  static const std::vector<std::string> parts{"gemm", "memory_bound", "host_copies", "nvlink_collectives"};
  return parts;
}

std::string timing_text(const std::vector<std::pair<std::string, std::string>>& sources)
{
  std::string text;
  for (const auto& [part, source] : sources)
    text += (text.empty() ? "" : ", ") + timing_part_title(part) + " " + source;
  return text;
}

std::string timing_part_title(const std::string& part)
{
  if (part == "gemm")
    return "GEMMs";
  if (part == "memory_bound")
    return "memory-bound kernels";
  if (part == "host_copies")
    return "host copies";
  if (part == "nvlink_collectives")
    return "NVLink collectives";
  return part;
}

} // namespace memwall

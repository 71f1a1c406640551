#include "hwmodels/TimingSources.hpp"

#include <algorithm>

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
                                             [](const CollectiveCurve& c) { return c.ranks == c.ranks_per_node; });
  std::string collectives = g.nvlink_bw <= 0                         ? "none"
                            : inside && !p->collectives_from.empty() ? "derived from " + p->collectives_from
                                                                     : fitted(inside);
  return {{"gemm", fitted(gemm)},
          {"memory_bound", fitted(kernel)},
          {"host_copies", fitted(copies)},
          {"nvlink_collectives", collectives}};
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

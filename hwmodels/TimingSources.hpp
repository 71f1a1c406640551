#pragma once
// Where each part of a GPU's timing comes from: the parts a comparison of machines must
// hold equal before its differences are the hardware's.
//
//   gemm                 GEMM and attention kernels
//   memory_bound         elementwise, norm and optimizer kernels (bytes over bandwidth)
//   host_copies          copies between host and GPU
//   nvlink_collectives   NCCL collectives and sends inside a node
//
// Each is "measured" (the GPU's own fitted profile, or the user's), "derived from ID"
// (another catalog GPU's measurements scaled by the two parts' ratios: a sibling part's
// whole profile, or a GPU of the same NVLink generation's collectives), "estimated" (the
// catalog's efficiencies and line rates) or "none" (a GPU without NVLink); GEMMs add
// "(held under a 700 W limit)" where the power limit's model slows them. The scale-out
// network is timed from the catalog's NIC figures for every machine alike, so it is no part.
#include "hwmodels/GpuSpec.hpp"

#include <string>
#include <utility>
#include <vector>

namespace memwall {

// The parts, in the order above.
const std::vector<std::string>& timing_parts();
// (part, source) in the order above.
std::vector<std::pair<std::string, std::string>> timing_sources(const GpuSpec& g);
// "GEMMs measured, memory-bound kernels measured, ...": (part, source) pairs in words.
std::string timing_text(const std::vector<std::pair<std::string, std::string>>& sources);

// The words a person reads for a part's key ("nvlink_collectives" -> "NVLink collectives").
std::string timing_part_title(const std::string& part);

} // namespace memwall

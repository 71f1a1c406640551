#pragma once
// A GPU whose profile measured no NCCL collectives takes a sibling's (GpuSpec::collectives_from).
//
// Inside one node NCCL's ring reaches a share of NVLink's line rate that belongs to the
// NVLink generation, the switch and NCCL, not to the GPU's memory or SMs: 8 x H100 reach
// 377 GB/s of bus bandwidth in the shipped fit, 8 x H200 on the same NVLink 4 baseboard
// 367.6 GB/s (ring, published; calibration/data/published_microbenchmarks.csv), and an
// H800's eight NVLink 4 links (200 GB/s) 160 GB/s usable (DeepSeek-V3 report, 3.2.2)
// against 168 from the H100's share. A catalog GPU without its own curves therefore takes
// the measured curves of a GPU of its NVLink generation, every bandwidth times the ratio
// of the two parts' nvlink_bw and every latency as measured, rather than line rate, which
// no NCCL reaches: comparing an H100 with measured collectives to an H200 timed at line
// rate credited the H200 with NCCL's overhead. The results say which GPU's curves timed
// the collectives (TimingSources.hpp).
#include "hwmodels/GpuSpec.hpp"

#include <string>

namespace memwall {

// Gives `g` the curves inside one node (ranks == ranks_per_node) of catalog GPU
// `g.collectives_from`, scaled as above; nothing when the key is empty or `g` holds them
// already. A GPU without a profile gets one holding only these curves. Throws InputError
// prefixed with `where` when the id names `g` itself, a GPU that takes its own curves from
// another, one without measured curves, or when `g`'s profile measured its own.
void take_collectives(GpuSpec& g, const std::string& where);

} // namespace memwall

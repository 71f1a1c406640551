#pragma once
// The MoE block of a transformers family's layer under the `pytorch` stack, counted as the
// inventories count it (calibration/research/hf-moe-inventory.md): shared by the MoE
// families' tests.
#include "workloads/training/blocks/BlockKernels.hpp"

#include <string>
#include <vector>

namespace memwall::test {

// Layer `layer` of the family's measured step (tests/data/hf_families/FAMILY: 4 x 1,024
// tokens, bf16 autocast), one micro-batch.
std::vector<KernelPlan> family_layer(const std::string& family, int64_t layer = 1);

struct MoeCount {
  int misplaced_syncs = 0; // a sync on an entry the walk does not meet first in its loop
  int fp32_gemms = 0, syncs = 0, sorts = 0, sort_passes = 0, gathers = 0, index_backwards = 0, masked_fills = 0;
  double experts_kept = 0; // bytes kept by the experts' path (not the router's, not a shared expert's)
};

// The "moe." kernels of a layer: fp32 GEMM launches (a backward entry of both gradients
// two), host syncs, radix sorts and their passes, forward gathers (tokens, rows, expert
// biases), index backwards, masked fills.
MoeCount count_moe(const std::vector<KernelPlan>& layer);

} // namespace memwall::test

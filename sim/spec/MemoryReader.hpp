#pragma once
// The spec's `memory` section: explicit memory (cudaMalloc, the default) or CUDA unified
// memory for the whole run or for chosen categories, with the program's hints.
#include "base/ParamReader.hpp"
#include "hwmodels/GpuSpec.hpp"
#include "sim/paging/UnifiedMemoryConfig.hpp"

namespace memwall {

// The driver's costs on `gpu`: the open-source driver's constants and the PCIe 3
// measurements (calibration/data/uvm.md), or where the GPU's profile measured first-touch
// faults (managed_fault), the on-demand migration rate and the cost of a batch from it.
UnifiedMemoryConfig managed_defaults(const GpuSpec& gpu);
// Keys the spec gives override those defaults.
UnifiedMemoryConfig read_memory_section(ParamReader& r, const GpuSpec& gpu);

} // namespace memwall

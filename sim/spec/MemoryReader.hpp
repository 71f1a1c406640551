#pragma once
// The spec's `memory` section: explicit memory (cudaMalloc, the default) or CUDA unified
// memory for the whole run or for chosen categories, with the program's hints.
#include "ParamReader.hpp"
#include "paging/UnifiedMemoryConfig.hpp"

namespace memwall {

UnifiedMemoryConfig read_memory_section(ParamReader& r);

} // namespace memwall

#pragma once
// The `hardware` section: a node preset or inline node, how many nodes, how many of
// each node's GPUs to use, an optional GPU override and network settings.
#include "base/ParamReader.hpp"
#include "hwmodels/ClusterSpec.hpp"

namespace memwall {

// Returns the cluster and the collective algorithm chosen under hardware.network.
ClusterSpec read_hardware_section(ParamReader& r, std::string& collective_algorithm, const std::string& spec_dir);

// A fitted profile times what it measured, so the catalog estimates it replaces are
// unused: `hardware.gpu.matmul_efficiency` (GEMMs of a generated step; a replayed
// trace still scales its recorded GEMMs by it) and `kernel_overhead_s` (launches). A
// value changed from the catalog's there is refused, not silently ignored. (A changed
// peak or HBM bandwidth scales the profile instead: hwmodels/ProfileScaling.hpp.)
void refuse_unused_estimates(const ParamReader& hw, const GpuSpec& gpu, bool generated_step);

} // namespace memwall

#pragma once
// The `hardware` section: a node preset or inline node, how many nodes, how many of
// each node's GPUs to use, an optional GPU override and network settings.
#include "base/ParamReader.hpp"
#include "hwmodels/ClusterSpec.hpp"

namespace memwall {

// Returns the cluster and the collective algorithm chosen under hardware.network.
ClusterSpec read_hardware_section(ParamReader& r, std::string& collective_algorithm, const std::string& spec_dir);

} // namespace memwall

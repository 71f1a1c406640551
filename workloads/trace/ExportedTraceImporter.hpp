#pragma once
// A trace memwall exported (`memwall export`, analysis/KinetoTraceWriter.hpp): its ops
// rebuilt as they were from each event's args.memwall, ids, dependencies, groups and
// folded ranks included, so the replay is the one the export came from. Every op is
// checked (ids in order, dependencies on earlier ops, devices in the cluster, a free
// matching its alloc); an error names the file and the op.
#include "hwmodels/ClusterSpec.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/trace/KinetoTrace.hpp"

namespace memwall {

OpDag import_exported(const std::vector<KinetoTrace>& traces, const ClusterSpec& cluster);

} // namespace memwall

#pragma once
// Building blocks shared by the collective implementations.
#include "CollectiveAlgorithm.hpp"

namespace memwall {

// One step of a ring among `members`: every member sends `bytes` to its successor.
CollectivePhase ring_step(const std::vector<DeviceRef>& members, double bytes);
// The same step in several disjoint rings at once (e.g. one per node).
CollectivePhase ring_step(const std::vector<std::vector<DeviceRef>>& rings, double bytes);
// Number of chunk steps a ring needs for a collective kind, and the bytes per step.
int ring_steps(CollectiveKind kind, size_t n);
double ring_chunk(CollectiveKind kind, size_t n, double bytes);

} // namespace memwall

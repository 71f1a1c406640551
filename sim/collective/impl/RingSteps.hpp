#pragma once
// Building blocks shared by the collective implementations.
#include "CollectiveAlgorithm.hpp"

namespace memwall {

// One step of a ring among `members`: every member sends `bytes` to its successor.
CollectivePhase ring_step(const std::vector<DeviceRef>& members, double bytes);
// The same step in several disjoint rings at once (e.g. one per node).
CollectivePhase ring_step(const std::vector<std::vector<DeviceRef>>& rings, double bytes);
// `steps` ring steps of `chunk` bytes in bulk form: one phase in which every member
// sends steps x chunk to its successor, then the latencies of the other steps as a
// delay. The same bandwidth time as the steps, with n flows instead of n x steps.
void append_bulk_steps(std::vector<CollectivePhase>& phases, const std::vector<std::vector<DeviceRef>>& rings, int steps,
                       double chunk, double hop_latency);
// Number of chunk steps a ring needs for a collective kind, and the bytes per step.
int ring_steps(CollectiveKind kind, size_t n);
double ring_chunk(CollectiveKind kind, size_t n, double bytes);

} // namespace memwall

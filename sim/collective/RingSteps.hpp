#pragma once
// Building blocks shared by the collective implementations.
#include "sim/collective/CollectiveAlgorithm.hpp"

namespace memwall {

// One step of a ring among `members`: every member sends `bytes` to its successor.
CollectivePhase ring_step(const std::vector<DeviceRef>& members, double bytes);
// The same step in several disjoint rings at once (e.g. one per node).
CollectivePhase ring_step(const std::vector<std::vector<DeviceRef>>& rings, double bytes);
// `steps` ring steps of `chunk` bytes in bulk form: one phase in which every member
// sends steps x chunk to its successor, then the latencies of the other steps as a
// delay. The same bandwidth time as the steps, with n flows instead of n x steps.
void append_bulk_steps(std::vector<CollectivePhase>& phases, const std::vector<std::vector<DeviceRef>>& rings,
                       int steps, double chunk, double hop_latency);
// An all-to-all of `bytes` per member (each member sends bytes / n to every member).
// When the group is whole nodes' worth of the same local GPUs (k nodes x g GPUs, the
// same local indices on each) and the nodes are switched, one phase of 2n flows in
// which each member sends its (g-1)/n share to the next member of its node and its
// (k-1)g/n share to the member of the same local index on the next node. Under the
// symmetry of an all-to-all (equal pairwise sizes, alike routes) every GPU port, NIC,
// node uplink and NVLink carries the same bytes as with the n(n-1) pairwise flows, and
// each flow lasts as long as the pairwise ones sharing its bottleneck: the same time
// with n(n-1)/2n fewer flows (4,032 -> 128 over 64 GPUs). Otherwise the pairwise flows.
CollectivePhase all_to_all_phase(const std::vector<DeviceRef>& group, double bytes, bool switched_nodes);
// Number of chunk steps a ring needs for a collective kind, and the bytes per step.
int ring_steps(CollectiveKind kind, size_t n);
double ring_chunk(CollectiveKind kind, size_t n, double bytes);

} // namespace memwall

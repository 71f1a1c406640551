#pragma once
// What a training layout's busiest GPU holds at the least: its stage's weights and
// optimizer states, with every ZeRO shard and offload at its most generous, the CUDA
// context, and when its schedule has the most passes in flight, each layer's input for
// every one of them. Gradients, the rest of the activations, workspace and the
// allocator's slack only add to it, so a layout whose floor exceeds the GPU's memory cannot fit and
// `memwall optimize` need not replay it. A bound for pruning, never a result: what a
// layout holds is what its replay allocates (tests/memory_floor_test.cpp holds the floor
// under replayed peaks).
#include "sim/spec/ExperimentSpec.hpp"

namespace memwall {

double model_state_floor_bytes(const ExperimentSpec& spec);

} // namespace memwall

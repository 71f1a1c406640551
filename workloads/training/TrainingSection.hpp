#pragma once
// Reads the `training` section of a spec: the layout, the stack, schedule and dispatcher
// picked by name from their registries, and the checks of their combinations. It sits
// above the concern folders (stack/, schedule/, dispatch/) it asks; the TrainingConfig it
// fills sits below them.
#include "base/ParamReader.hpp"
#include "workloads/model/ModelSpec.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

#include <cstdint>

namespace memwall {

// `gpus` is the number of GPUs the hardware section provides; dp defaults to gpus / (tp pp).
TrainingConfig read_training_section(ParamReader& r, int64_t gpus, const ModelSpec& model);

// "tp 8 x pp 8 x dp 1, 1f1b, ZeRO-1, bf16, adam, recompute selective, flash attention on, ..."
std::string describe_training(const TrainingConfig& t);

} // namespace memwall

#pragma once
// The `training.lora` section (PEFT's LoRA and QLoRA): read and documented here, and
// checked against the stack that runs it. Its targets are memwall's groups, which every
// stack knows, or transformers' module names as PEFT's target_modules lists them.
#include "base/ParamReader.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

namespace memwall {

class TrainingStack;

// `training.lora`, read (and so documented) even when absent: its presence turns LoRA on.
LoraConfig read_lora_section(ParamReader& training);
// Refuses, naming the key, what PEFT does and `stack` does not: transformers' module names,
// lora_dropout and autocast_adapter_dtype on a stack that runs no transformers modules.
void check_lora(ParamReader& training, const TrainingConfig& t, const TrainingStack& stack);

} // namespace memwall

#pragma once
// What a transformers release does on a causal LM's logits and loss
// (`training.transformers_release`; calibration/research/transformers-loss-path.md, read at
// each release's tag): where the logits are cast to fp32 and whether the loss copies them
// shifted. The rest of the modules are modelled as transformers 5 runs them.
#include "base/ReleaseNumber.hpp"
#include "workloads/model/ModelSpec.hpp"

#include <optional>
#include <string>

namespace memwall::hf {

enum class LossPath {
  // 4.40-4.45: LlamaForCausalLM.forward casts the logits to fp32 itself (the bf16 ones
  // freed at once; the fp32 ones are the output's), then CrossEntropyLoss over
  // logits[..., :-1, :].contiguous(): a shifted fp32 copy.
  model_upcast_shifted_copy,
  // 4.46-4.48: the output holds the bf16 logits; ForCausalLMLoss casts them and copies
  // them shifted.
  loss_upcast_shifted_copy,
  // 4.49 on: ForCausalLMLoss casts them and pads and shifts the labels instead: no copy.
  shifted_labels,
};

struct TransformersRules {
  ReleaseNumber first; // the first release these rules hold for
  LossPath loss = LossPath::shifted_labels;
  // gradient_checkpointing_enable's default: torch.utils.checkpoint(use_reentrant=True)
  // until 4.57, False from 5.0 (modeling_utils.py at each tag).
  bool reentrant_checkpoint = true;
};

// The oldest release read; anything older is refused.
ReleaseNumber oldest_transformers_release();
// The newest release read, what a spec that names none runs; a newer one takes its rules.
ReleaseNumber newest_transformers_release();
// The rules `release` falls under (at or after the oldest).
TransformersRules transformers_rules(const ReleaseNumber& release);
// The loss path of a spec's release (none: the newest).
LossPath loss_path(const std::optional<ReleaseNumber>& release);
// Whether the release's gradient checkpointing is reentrant by default (none: the newest).
bool reentrant_checkpoint(const std::optional<ReleaseNumber>& release);
// Why `release` is not modelled for the model ("" if it is): the paths before 4.49 were
// read in LlamaForCausalLM alone (GPT-2, GPT-NeoX and OPT shifted a bf16 copy in their own
// forwards then), and a model transformers did not have yet.
std::string transformers_release_refusal(const ModelSpec& m, const ReleaseNumber& release);

} // namespace memwall::hf

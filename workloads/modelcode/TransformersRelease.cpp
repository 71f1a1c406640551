#include "workloads/modelcode/TransformersRelease.hpp"

#include <vector>

namespace memwall::hf {
namespace {

// One row per change, oldest first (calibration/research/transformers-loss-path.md: the
// first release tag containing each commit).
const std::vector<TransformersRules>& rules()
{
  static const std::vector<TransformersRules> r{
      {*ReleaseNumber::parse("4.40.0"), LossPath::model_upcast_shifted_copy},
      // Pull requests 33902 and 34191: the model returns the bf16 logits; the loss moves
      // into loss_utils.ForCausalLMLoss, still shifting a contiguous copy.
      {*ReleaseNumber::parse("4.46.0"), LossPath::loss_upcast_shifted_copy},
      // Pull request 35646: the labels padded with -100 and shifted instead of the logits.
      {*ReleaseNumber::parse("4.49.0"), LossPath::shifted_labels},
      // Pull request 43203: gradient_checkpointing_enable's default use_reentrant False.
      {*ReleaseNumber::parse("5.0.0"), LossPath::shifted_labels, false},
  };
  return r;
}

} // namespace

ReleaseNumber oldest_transformers_release() { return rules().front().first; }

// The release of the project's measured H200 steps (calibration/data/measured/h200), whose
// kernels match the modules as read at main (5.16.0.dev0; ForCausalLMLoss as in 5.0-5.15).
ReleaseNumber newest_transformers_release() { return *ReleaseNumber::parse("5.17.0"); }

std::string transformers_release_refusal(const ModelSpec& m, const ReleaseNumber& release)
{
  if (m.family == "gpt_oss" && !release.from(*ReleaseNumber::parse("4.55.0")))
    return "transformers " + release.str() + " has no gpt_oss model: 4.55.0 and later";
  if (m.family != "llama" && !release.from(*ReleaseNumber::parse("4.49.0")))
    return "the loss paths before 4.49 are modelled for LlamaForCausalLM (model family llama) alone; " + m.name + " (" +
           m.family + ") from 4.49.0";
  return "";
}

LossPath loss_path(const std::optional<ReleaseNumber>& release)
{
  return transformers_rules(release ? *release : newest_transformers_release()).loss;
}

bool reentrant_checkpoint(const std::optional<ReleaseNumber>& release)
{
  return transformers_rules(release ? *release : newest_transformers_release()).reentrant_checkpoint;
}

TransformersRules transformers_rules(const ReleaseNumber& release)
{
  TransformersRules pick = rules().front();
  for (const TransformersRules& r : rules())
    if (release.from(r.first))
      pick = r;
  return pick;
}

} // namespace memwall::hf

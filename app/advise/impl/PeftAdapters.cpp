// Parameter-efficient fine-tuning instead of a full one: the base frozen (no gradients,
// no optimizer states for it), rank-16 adapters on every projection (PEFT's LoRA), then
// the base in 4-bit NF4 (QLoRA: bitsandbytes). A different training (the adapters learn,
// not the weights), so after the remedies that keep it whole.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class PeftAdapters final : public Remedy {
public:
  int cost_order() const override { return 45; }
  bool for_serving() const override { return false; }
  bool changes_what_trains() const override { return true; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const TrainingConfig& t = spec.training;
    if (t.lora.enabled || !t.stack->runs_lora(spec.model) || t.precision == Dtype::fp32)
      return {};
    // Keys one by one, no spaces: the advisor's command lines stay copyable.
    const std::vector<std::string> lora{"training.lora.rank=16", "training.lora.targets=[qkv,proj,mlp.up,mlp.down]"};
    std::vector<std::string> qlora = lora;
    qlora.push_back("training.lora.base=nf4");
    std::vector<RemedyTry> out{{"LoRA rank 16 on every projection (the base frozen)", lora},
                               {"QLoRA: LoRA rank 16 on an NF4 base", qlora}};
    // PEFT's recipes checkpoint the layers too (prepare_model_for_kbit_training turns it on).
    if (t.recompute != Recompute::full)
      for (size_t i = 0, n = out.size(); i < n; ++i) {
        RemedyTry r = out[i];
        r.change += " with gradient checkpointing";
        r.overrides.push_back("training.recompute=full");
        out.push_back(r);
      }
    return out;
  }
};

const bool registered = remedy_registry().add(
    "peft-adapters", "LoRA adapters on a frozen base, then QLoRA's 4-bit base (trains the adapters only)",
    [] { return std::make_unique<PeftAdapters>(); });

} // namespace
} // namespace memwall

#include "workloads/training/LoraSection.hpp"

#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>

namespace memwall {

LoraConfig read_lora_section(ParamReader& parent)
{
  LoraConfig l;
  l.enabled        = parent.has("lora");
  ParamReader r    = parent.section("lora", "LoRA adapters; absent: all weights are trained");
  l.rank           = r.integer("rank", l.rank, "adapter rank r", 1);
  std::string base = r.choice("base", "bf16", {"bf16", "nf4"},
                              "frozen base weights: bf16, or nf4 for QLoRA (4-bit NormalFloat, double quantization)");
  l.nf4_base       = base == "nf4";
  std::string adapters =
      r.choice("adapter_dtype", "fp32", {"fp32", "bf16"},
               "the adapters' dtype (stack pytorch): fp32 as get_peft_model upcasts them (autocast_adapter_dtype=True, "
               "PEFT's default; an NF4 base's adapters stay fp32 either way), or bf16 on a bf16 model as "
               "autocast_adapter_dtype=False leaves them (or a script casts them, as the QLoRA paper's does)");
  l.adapter_dtype           = *dtype_from_name(adapters);
  l.dropout                 = r.number("dropout", 0.0,
                                       "PEFT's lora_dropout: nn.Dropout(p) on each adapted projection's input while the model "
                                                       "trains (the Trainer's model.train()): its bool mask kept, and its output where "
                                                       "lora_A reads it uncast; 0 (LoraConfig's default), or a model left in eval mode: "
                                                       "nn.Identity",
                                       0.0, 0.99);
  const std::string allowed = "allowed: " + join(lora_target_groups()) + " (memwall's groups), or " +
                              join(lora_module_names()) + " (transformers' modules, as PEFT's target_modules)";
  YAML::Node t = r.take("targets", "list of: " + join(lora_target_groups()) + ", or transformers' module names",
                        "projections that get adapters: memwall's groups, which every stack knows, or "
                        "transformers' module names as PEFT's target_modules names them (stack pytorch)",
                        "[qkv, proj, mlp.up, mlp.down]");
  if (t.IsDefined() && !t.IsNull()) {
    if (!t.IsSequence() || t.size() == 0)
      r.fail("targets", "expected a non-empty list; " + allowed);
    l.targets.clear();
    for (const auto& e : t) {
      std::string name   = e.IsScalar() ? e.as<std::string>() : "";
      const auto& groups = lora_target_groups();
      if (std::find(groups.begin(), groups.end(), name) == groups.end() && !is_lora_module_name(name))
        r.fail("targets", "'" + name + "' is not a projection; " + allowed);
      l.targets.push_back(name);
    }
  }
  r.finish();
  return l;
}

void check_lora(ParamReader& r, const TrainingConfig& t, const TrainingStack& stack)
{
  for (const std::string& target : t.lora.enabled ? t.lora.targets : std::vector<std::string>{})
    if (!stack.runs_transformers_modules() && is_lora_module_name(target))
      r.fail("lora", "targets: '" + target + "' names a transformers module; training.stack " + stack.name() +
                         " adapts memwall's groups: " + join(lora_target_groups()));
  if (t.lora.enabled && t.lora.dropout > 0 && !stack.runs_transformers_modules())
    r.fail("lora", "dropout: PEFT's lora_dropout, on transformers' modules (stack pytorch); training.stack " +
                       stack.name() + " runs its adapters without one");
  if (t.lora.enabled && t.lora.adapter_dtype != Dtype::fp32 && !stack.runs_transformers_modules())
    r.fail("lora", "adapter_dtype: PEFT's autocast_adapter_dtype, on transformers' modules (stack pytorch); "
                   "training.stack " +
                       stack.name() + " keeps its adapters as its other trained weights");
}

} // namespace memwall

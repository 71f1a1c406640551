#include "workloads/training/config/TrainingConfig.hpp"

#include <algorithm>

namespace memwall {

std::vector<int64_t> TrainingConfig::stage_layers(int64_t layers) const
{
  int64_t stages = pp * virtual_stages;
  if (embedding_in_split || loss_in_split) { // transformer_block.py's get_num_layers_to_build
    int64_t counted = layers + (embedding_in_split ? 1 : 0) + (loss_in_split ? 1 : 0);
    if (counted % stages != 0 || first_stage_layers > 0 || last_stage_layers > 0)
      return {};
    std::vector<int64_t> v(static_cast<size_t>(stages), counted / stages);
    v.front() -= embedding_in_split ? 1 : 0;
    v.back() -= loss_in_split ? 1 : 0;
    if (v.front() < 0 || v.back() < 0)
      return {};
    return v;
  }
  if (first_stage_layers == 0 && last_stage_layers == 0 && torchtitan_split) {
    // torchtitan's generate_split_points (pipeline.py, 2024): base = layers / stages to
    // the first virtual stage, one more to each middle one while the remainder lasts,
    // what is left to the last.
    if (stages > layers)
      return {};
    int64_t base = layers / stages, extra = layers % stages, given = 0;
    std::vector<int64_t> v(static_cast<size_t>(stages), base);
    for (size_t i = 1; i + 1 < v.size(); ++i)
      if (extra > 0)
        ++v[i], --extra;
    for (size_t i = 0; i + 1 < v.size(); ++i)
      given += v[i];
    v.back() = layers - given;
    return v;
  }
  if (first_stage_layers == 0 && last_stage_layers == 0)
    return layers % stages == 0 ? std::vector<int64_t>(static_cast<size_t>(stages), layers / stages)
                                : std::vector<int64_t>{};
  int64_t middle = pp - (first_stage_layers > 0 ? 1 : 0) - (last_stage_layers > 0 ? 1 : 0);
  int64_t rest   = layers - first_stage_layers - last_stage_layers;
  if (virtual_stages != 1 || rest < middle || (middle == 0 ? rest != 0 : rest % middle != 0))
    return {};
  std::vector<int64_t> v(static_cast<size_t>(pp), middle > 0 ? rest / middle : 0);
  if (first_stage_layers > 0)
    v.front() = first_stage_layers;
  if (last_stage_layers > 0)
    v.back() = last_stage_layers;
  return v;
}

bool LoraConfig::targets_kernel(const std::string& gemm) const
{
  return enabled && std::find(targets.begin(), targets.end(), gemm) != targets.end();
}

bool LoraConfig::targets_module(const std::string& group, const std::string& module) const
{
  return targets_kernel(group) || (!module.empty() && targets_kernel(module));
}

const std::vector<std::string>& lora_target_groups()
{
  static const std::vector<std::string> groups{"qkv", "proj", "mlp.up", "mlp.down"};
  return groups;
}

// The Llama family's and Gemma's seven, Phi-3's two fused ones (its o_proj and down_proj
// among the seven).
const std::vector<std::string>& lora_module_names()
{
  static const std::vector<std::string> names{"q_proj",  "k_proj",    "v_proj",   "o_proj",      "gate_proj",
                                              "up_proj", "down_proj", "qkv_proj", "gate_up_proj"};
  return names;
}

bool is_lora_module_name(const std::string& target)
{
  const auto& names = lora_module_names();
  return std::find(names.begin(), names.end(), target) != names.end();
}

double optimizer_flops_per_param(Optimizer o)
{
  switch (o) {
    case Optimizer::adam:
    case Optimizer::adamw:
    case Optimizer::adam8bit:
    case Optimizer::paged_adamw_32bit:
    case Optimizer::paged_adamw_8bit: return 12.0;
    case Optimizer::sgd: return 4.0;
    case Optimizer::adafactor: return 10.0;
  }
  return 12.0;
}

} // namespace memwall

#include "workloads/training/config/TrainingConfig.hpp"

#include <algorithm>

namespace memwall {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

std::vector<int64_t> TrainingConfig::stage_layers(int64_t layers) const
{
  int64_t stages = pp * virtual_stages;
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

std::string describe_training(const TrainingConfig& t)
{
  static const char* optimizers[] = {"adam", "adamw", "adam8bit", "sgd", "adafactor"};
  static const char* recomputes[] = {"none", "selective", "full"};
  static const char* targets[]    = {"none", "cpu", "nvme"};
  std::string s = (t.stack == "megatron" ? std::string() : t.stack + ", ") + "tp " + str(t.tp) + (t.sp ? " (sp)" : "") +
                  " x pp " + str(t.pp) + (t.cp > 1 ? " x cp " + str(t.cp) : std::string()) + " x dp " + str(t.dp);
  if (t.ep > 1 || t.etp != t.tp)
    s += " (ep " + str(t.ep) + (t.etp != t.tp ? ", etp " + str(t.etp) : std::string()) + ")";
  if (t.pp > 1)
    s += ", " + t.pipeline_schedule + (t.virtual_stages > 1 ? " v=" + str(t.virtual_stages) : "");
  s += ", ZeRO-" + std::to_string(t.zero) + ", " + dtype_name(t.precision) + ", " +
       optimizers[static_cast<int>(t.optimizer)] + ", recompute " + recomputes[static_cast<int>(t.recompute)] +
       ", flash attention " + (t.flash_attention ? "on" : "off");
  if (t.lora.enabled)
    s += std::string(", ") + (t.lora.nf4_base ? "QLoRA" : "LoRA") + " r=" + str(t.lora.rank);
  if (t.offload_optimizer != OffloadTarget::none)
    s += std::string(", optimizer offload ") + targets[static_cast<int>(t.offload_optimizer)];
  if (t.offload_params != OffloadTarget::none)
    s += std::string(", parameter offload ") + targets[static_cast<int>(t.offload_params)];
  return s;
}

double optimizer_flops_per_param(Optimizer o)
{
  switch (o) {
    case Optimizer::adam:
    case Optimizer::adamw:
    case Optimizer::adam8bit: return 12.0;
    case Optimizer::sgd: return 4.0;
    case Optimizer::adafactor: return 10.0;
  }
  return 12.0;
}

} // namespace memwall

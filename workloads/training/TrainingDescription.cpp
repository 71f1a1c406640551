#include "workloads/training/TrainingSection.hpp"

#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

// The default stack goes unnamed: a line that names none runs Megatron-LM.
std::string describe_training(const TrainingConfig& t)
{
  static const char* optimizers[] = {
      "adam", "adamw", "adam8bit", "sgd", "adafactor", "paged_adamw_32bit", "paged_adamw_8bit"};
  static const char* recomputes[] = {"none", "selective", "full"};
  static const char* targets[]    = {"none", "cpu", "nvme"};
  std::string s =
      (t.stack->name() == training_stack_registry().default_name() ? std::string() : t.stack->name() + ", ") + "tp " +
      str(t.tp) + (t.sp ? " (sp)" : "") + " x pp " + str(t.pp) + (t.cp > 1 ? " x cp " + str(t.cp) : std::string()) +
      " x dp " + str(t.dp);
  if (t.ep > 1 || t.etp != t.tp)
    s += " (ep " + str(t.ep) + (t.etp != t.tp ? ", etp " + str(t.etp) : std::string()) + ")";
  if (t.pp > 1)
    s += ", " + t.pipeline_schedule->name() + (t.virtual_stages > 1 ? " v=" + str(t.virtual_stages) : "");
  s += ", ZeRO-" + std::to_string(t.zero) + ", " + dtype_name(t.precision) + ", " +
       optimizers[static_cast<int>(t.optimizer)] + ", recompute " + recomputes[static_cast<int>(t.recompute)] +
       (t.recompute == Recompute::full && t.recompute_block_layers > 0
            ? " (block: " + str(t.recompute_block_layers) + " layers a chunk)"
            : std::string()) +
       ", flash attention " + (t.flash_attention ? "on" : "off");
  if (t.lora.enabled)
    s += std::string(", ") + (t.lora.nf4_base ? "QLoRA" : "LoRA") + " r=" + str(t.lora.rank) +
         (t.lora.adapter_dtype != Dtype::fp32 ? std::string(" (") + dtype_name(t.lora.adapter_dtype) + " adapters)"
                                              : "");
  if (t.liger_kernel)
    s += ", Liger kernels";
  if (t.transformers_release)
    s += ", transformers " + t.transformers_release->str();
  if (t.offload_optimizer != OffloadTarget::none)
    s += std::string(", optimizer offload ") + targets[static_cast<int>(t.offload_optimizer)];
  if (t.offload_params != OffloadTarget::none)
    s += std::string(", parameter offload ") + targets[static_cast<int>(t.offload_params)];
  return s;
}

} // namespace memwall

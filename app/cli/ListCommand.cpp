#include "hwmodels/Catalog.hpp"
#include "app/cli/Commands.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "base/Quantity.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"
#include "workloads/training/stack/TrainingStack.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "sim/collective/CollectiveAlgorithm.hpp"
#include "app/advise/Remedy.hpp"
#include "calibration/importers/Importer.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "sim/spec/SpecParams.hpp"
#include "sim/paging/EvictionPolicy.hpp"
#include "sim/paging/PrefetchPolicy.hpp"
#include "sim/allocator/DeviceAllocator.hpp"

#include <cstdio>
#include <functional>
#include <map>

namespace memwall {
namespace {

int list_gpus()
{
  // Memory is what the driver reports (nvidia-smi's total), in GiB; profile: "measured"
  // where the GPU ships a profile fitted on measurements of the part itself, "derived"
  // where that profile scales a sibling part's fit, "estimated" where its efficiencies
  // are guesses.
  std::printf("%-16s %-30s %11s %11s %12s %10s %9s  %s\n", "id", "name", "memory", "HBM bw", "bf16/fp16", "NVLink/dir",
              "price", "profile");
  for (const auto& id : gpu_preset_ids()) {
    GpuSpec g = gpu_preset(id);
    double half = std::max(g.peak(Dtype::bf16), g.peak(Dtype::fp16));
    std::printf("%-16s %-30s %11s %11s %12s %10s %8.0f$  %s\n", id.c_str(), g.name.c_str(),
                format_gib(g.memory_bytes).c_str(), format_si(g.hbm_peak_bw, "B/s").c_str(),
                format_si(half, "FLOP/s").c_str(), format_si(g.nvlink_bw, "B/s").c_str(), g.price_usd,
                !g.profile ? "estimated" : g.profile->derived_from.empty() ? "measured" : "derived");
  }
  return 0;
}

int list_nodes()
{
  std::printf("%-20s %-34s %-20s %8s %10s %10s\n", "id", "name", "GPUs", "fabric", "DRAM", "NICs");
  for (const auto& id : node_preset_ids()) {
    NodeSpec n = node_preset(id);
    std::string gpus = std::to_string(n.gpus) + " x " + n.gpu.id;
    std::string nics = n.nics ? std::to_string(n.nics) + " x " + format_si(n.nic_bw, "B/s") : "none";
    std::printf("%-20s %-34s %-20s %8s %10s %10s\n", id.c_str(), n.name.c_str(), gpus.c_str(),
                n.fabric == GpuFabric::nvswitch ? "nvswitch" : "pcie", format_gib(n.dram_bytes).c_str(), nics.c_str());
  }
  return 0;
}

int list_models()
{
  std::printf("%-16s %-12s %7s %7s %6s %6s %7s %7s %9s %10s %10s\n", "id", "family", "layers", "hidden", "heads", "kv",
              "ffn", "vocab", "experts", "parameters", "active");
  for (const auto& id : model_preset_ids()) {
    ModelSpec m = model_preset(id);
    std::string experts = m.moe.enabled() ? std::to_string(m.moe.top_k) + "/" + std::to_string(m.moe.experts) : "-";
    if (m.moe.shared_experts > 0)
      experts += "+" + std::to_string(m.moe.shared_experts);
    std::printf("%-16s %-12s %7lld %7lld %6lld %6lld %7lld %7lld %9s %10s %10s\n", id.c_str(), m.family.c_str(),
                (long long)m.layers, (long long)m.hidden, (long long)m.heads, (long long)m.kv_heads,
                (long long)(m.moe.enabled() ? m.moe.expert_ffn : m.ffn_hidden), (long long)m.vocab, experts.c_str(),
                format_si(m.total_params(), "").c_str(), format_si(m.active_params(), "").c_str());
  }
  std::printf("\nexperts: routed per token / routed (+ shared); ffn: one expert's for MoE models.\n"
              "model.hf_config reads a HuggingFace config.json of model_type %s.\n",
              join(hf_model_types()).c_str());
  return 0;
}

int list_params()
{
  std::printf("%-42s %-40s %-14s %s\n", "key", "type", "default", "description");
  for (const auto& d : spec_param_docs())
    std::printf("%-42s %-40s %-14s %s\n", d.path.c_str(), d.type.c_str(),
                d.default_text.empty() ? "(required)" : d.default_text.c_str(), d.description.c_str());
  return 0;
}

// One registry of swappable implementations: name and description per line.
template <typename Factory>
std::function<int()> list_registry(const Registry<Factory>& registry)
{
  return [&registry] {
    for (const auto& [name, entry] : registry.entries())
      std::printf("%-14s %s\n", name.c_str(), entry.description.c_str());
    return 0;
  };
}

// The advisor's remedies in the order it tries them, training then serving.
int list_remedies()
{
  for (bool serving : {false, true}) {
    std::printf("%s\n", serving ? "\nserving" : "training");
    for (const NamedRemedy& r : remedies_in_cost_order(serving))
      std::printf("  %-22s %s\n", r.name.c_str(), r.description.c_str());
  }
  return 0;
}

} // namespace

int list_command(const std::vector<std::string>& args)
{
  static const std::map<std::string, std::function<int()>> what{{"gpus", list_gpus},
                                                               {"nodes", list_nodes},
                                                               {"models", list_models},
                                                               {"params", list_params},
                                                               {"collectives", list_registry(collective_registry())},
                                                               {"schedules", list_registry(pipeline_schedule_registry())},
                                                               {"stacks", list_registry(training_stack_registry())},
                                                               {"dispatchers", list_registry(token_dispatcher_registry())},
                                                               {"schedulers", list_registry(batch_scheduler_registry())},
                                                               {"kv-managers", list_registry(kv_manager_registry())},
                                                               {"engines", list_registry(inference_engine_registry())},
                                                               {"remedies", list_remedies},
                                                               {"importers", list_registry(importer_registry())},
                                                               {"eviction-policies", list_registry(eviction_registry())},
                                                               {"prefetch-policies", list_registry(prefetch_registry())},
                                                               {"allocators", list_registry(allocator_registry())}};
  if (args.size() != 1 || !what.count(args[0])) {
    std::string subjects;
    for (const auto& [name, fn] : what)
      subjects += (subjects.empty() ? "" : ", ") + name;
    throw InputError("list: expected one of " + subjects);
  }
  return what.at(args[0])();
}

} // namespace memwall

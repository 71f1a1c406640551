#include "app/advise/Remedy.hpp"
#include "app/cli/Commands.hpp"
#include "app/optimize/LayoutAxis.hpp"
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"
#include "calibration/importers/Importer.hpp"
#include "hwmodels/Catalog.hpp"
#include "hwmodels/TimingSources.hpp"
#include "sim/allocator/DeviceAllocator.hpp"
#include "sim/collective/CollectiveAlgorithm.hpp"
#include "sim/paging/EvictionPolicy.hpp"
#include "sim/paging/PrefetchPolicy.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "sim/spec/SpecParams.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

namespace memwall {
namespace {

// Columns as wide as their widest cell, so that a long name never shifts the rest.
void print_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right)
{
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      std::string pad(width[c] - row[c].size(), ' ');
      line += (c ? "  " : "") + (right[c] ? pad + row[c] : row[c] + (c + 1 < row.size() ? pad : ""));
    }
    std::printf("%s\n", line.c_str());
  }
}

// A GPU's profile in a few words: its kernels' source (TimingSources.hpp), and where
// its collectives came from when another GPU's measurements time them.
std::string profile_words(const GpuSpec& g)
{
  std::string kernels, collectives;
  for (const auto& [part, source] : timing_sources(g))
    if (part == "gemm")
      kernels = source.starts_with("derived") ? "derived" : source;
    else if (part == "nvlink_collectives" && source.starts_with("derived") &&
             !(g.profile && source == "derived from " + g.profile->derived_from))
      collectives = ", collectives from " + source.substr(13);
  return kernels + collectives;
}

int list_gpus()
{
  // Memory is what the driver reports (nvidia-smi's total), in GiB; profile: "measured"
  // where the GPU ships a profile fitted on measurements of the part itself, "derived"
  // where that profile scales a sibling part's fit, "estimated" where its efficiencies
  // are guesses.
  std::vector<std::vector<std::string>> rows{
      {"id", "name", "memory", "HBM bw", "bf16/fp16", "NVLink/dir", "TDP", "price", "profile"}};
  for (const auto& id : gpu_preset_ids()) {
    GpuSpec g   = gpu_preset(id);
    double half = std::max(g.peak(Dtype::bf16), g.peak(Dtype::fp16));
    rows.push_back({id, g.name, format_gib(g.memory_bytes), format_si(g.hbm_peak_bw, "B/s"), format_si(half, "FLOP/s"),
                    g.nvlink_bw > 0 ? format_si(g.nvlink_bw, "B/s") : "none",
                    g.tdp_w > 0 ? format_count(g.tdp_w) + " W" : "-", format_usd(g.price_usd), profile_words(g)});
  }
  print_table(rows, {false, false, true, true, true, true, true, true, false});
  return 0;
}

int list_nodes()
{
  std::vector<std::vector<std::string>> rows{{"id", "name", "GPUs", "GPU fabric", "DRAM", "NICs", "power", "price"}};
  for (const auto& id : node_preset_ids()) {
    NodeSpec n = node_preset(id);
    rows.push_back({id, n.name, std::to_string(n.gpus) + " x " + n.gpu.id, gpu_fabric_name(n.fabric),
                    format_bytes(n.dram_bytes),
                    n.nics ? std::to_string(n.nics) + " x " + format_si(n.nic_bw, "B/s") : "none",
                    n.power_w > 0 ? format_si(n.power_w, "W") : "-", format_usd(n.price_usd)});
  }
  print_table(rows, {false, false, false, false, true, true, true, true});
  return 0;
}

int list_models()
{
  std::vector<std::vector<std::string>> rows{
      {"id", "family", "layers", "hidden", "heads", "kv", "ffn", "vocab", "experts", "parameters", "active"}};
  for (const auto& id : model_preset_ids()) {
    ModelSpec m         = model_preset(id);
    std::string experts = m.moe.enabled() ? std::to_string(m.moe.top_k) + "/" + std::to_string(m.moe.experts) : "-";
    if (m.moe.shared_experts > 0)
      experts += "+" + std::to_string(m.moe.shared_experts);
    auto n = [](int64_t v) { return format_count(static_cast<double>(v)); };
    rows.push_back({id, m.family, n(m.layers), n(m.hidden), n(m.heads), n(m.kv_heads),
                    n(m.moe.enabled() ? m.moe.expert_ffn : m.ffn_hidden), n(m.vocab), experts,
                    format_params(m.total_params()), format_params(m.active_params())});
  }
  print_table(rows, {false, false, true, true, true, true, true, true, true, true, true});
  std::printf("\nexperts: routed per token / routed (+ shared); ffn: one expert's for MoE models.\n"
              "model.hf_config reads a HuggingFace config.json of model_type %s.\n",
              join(hf_model_types()).c_str());
  return 0;
}

// Every key with the implementations that read it ("-": the section's own key).
int list_params()
{
  std::printf("%-42s %-40s %-14s %-30s %s\n", "key", "type", "default", "owner", "description");
  for (const auto& d : spec_param_docs())
    std::printf("%-42s %-40s %-14s %-30s %s\n", d.path.c_str(), d.type.c_str(),
                d.default_text.empty() ? "(required)" : d.default_text.c_str(), d.owner.empty() ? "-" : d.owner.c_str(),
                d.description.c_str());
  return 0;
}

// A subject of `memwall list`: its printer and, for a registry of swappable
// implementations, what the concern is and the key that picks one.
struct Subject {
  std::function<int()> print;
  std::string what, key;
};

// The keys (not the mappings holding them) documented as read by `owner`, under `section`.
std::vector<std::string> keys_owned_by(const std::string& owner, const std::string& section)
{
  std::vector<std::string> out;
  for (const ParamDoc& d : param_docs()) {
    if (d.type != "mapping" && d.read_by(owner))
      out.push_back(d.path.substr(d.path.rfind(section + ".", 0) == 0 ? section.size() + 1 : 0));
  }
  return out;
}

// One registry: name and description per line, listed under the registry's own subject.
template <typename Factory>
std::pair<std::string, Subject> registry_subject(const Registry<Factory>& registry,
                                                 std::function<int()> print = nullptr)
{
  if (!print)
    print = [&registry] {
      for (const auto& [name, entry] : registry.entries()) {
        std::printf("%-14s %s\n", name.c_str(), entry.description.c_str());
        // The keys the implementation reads, made with its defaults: its own knobs.
        registry.describe(name);
        std::vector<std::string> keys = keys_owned_by(registry.owner(name), registry.section());
        if (!keys.empty())
          std::printf("%-14s keys: %s\n", "", join(keys).c_str());
      }
      return 0;
    };
  return {registry.list_subject(), {print, registry.what(), registry.key()}};
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

// The layout search's axes in the order it enumerates them, with the key each sets.
int list_layout_axes()
{
  for (const NamedAxis& a : layout_axes_in_order())
    std::printf("%-18s %-28s %s\n", a.name.c_str(), a.axis->key().c_str(), a.description.c_str());
  return 0;
}

const std::map<std::string, Subject>& subjects()
{
  static const std::map<std::string, Subject> all{{"gpus", {list_gpus, "", ""}},
                                                  {"nodes", {list_nodes, "", ""}},
                                                  {"models", {list_models, "", ""}},
                                                  {"params", {list_params, "", ""}},
                                                  registry_subject(collective_registry()),
                                                  registry_subject(pipeline_schedule_registry()),
                                                  registry_subject(training_stack_registry()),
                                                  registry_subject(token_dispatcher_registry()),
                                                  registry_subject(batch_scheduler_registry()),
                                                  registry_subject(kv_manager_registry()),
                                                  registry_subject(inference_engine_registry()),
                                                  registry_subject(remedy_registry(), list_remedies),
                                                  registry_subject(layout_axis_registry(), list_layout_axes),
                                                  registry_subject(importer_registry()),
                                                  registry_subject(eviction_registry()),
                                                  registry_subject(prefetch_registry()),
                                                  registry_subject(allocator_registry())};
  return all;
}

// Every registry's implementations under its subject, what it is and its key: the
// README's list is this output (tests/readme_lists_test.cpp).
int list_implementations()
{
  bool first = true;
  for (const auto& [name, subject] : subjects()) {
    if (subject.key.empty())
      continue;
    std::printf("%s%s: %s (%s)\n", first ? "" : "\n", name.c_str(), subject.what.c_str(), subject.key.c_str());
    std::fflush(stdout);
    subject.print();
    first = false;
  }
  return 0;
}

} // namespace

int list_command(const std::vector<std::string>& args)
{
  if (args.size() == 1 && args[0] == "implementations")
    return list_implementations();
  if (args.size() != 1 || !subjects().count(args[0])) {
    std::string names;
    for (const auto& [name, subject] : subjects())
      names += (names.empty() ? "" : ", ") + name;
    throw InputError("list: expected one of " + names + " or implementations");
  }
  return subjects().at(args[0]).print();
}

} // namespace memwall

#include "sim/spec/ExperimentSpec.hpp"
#include "base/TextFile.hpp"
#include "base/YamlDocument.hpp"
#include "hwmodels/Catalog.hpp"

#include "sim/allocator/DeviceAllocator.hpp"
#include "sim/spec/HardwareReader.hpp"
#include "sim/spec/MemoryReader.hpp"
#include "workloads/inference/InferenceSection.hpp"
#include "workloads/model/ModelReader.hpp"
#include "workloads/training/TrainingSection.hpp"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace memwall {
namespace {

void apply_override(YAML::Node root, const std::string& file, const std::string& assignment)
{
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set " + assignment + ": expected KEY=VALUE, e.g. --set training.micro_batch=4");
  std::string path = assignment.substr(0, eq);
  YAML::Node value = parse_yaml(assignment.substr(eq + 1), "--set " + path);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');)
    parts.push_back(p);
  YAML::Node cur = root;
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (i ? "." : "") + parts[i];
    YAML::Node next = cur[parts[i]];
    // A preset id is shorthand for {preset: id}: `--set hardware.gpu=a100-sxm4-40gb
    // --set hardware.gpu.memory_bytes=80e9` changes one field of that preset.
    if (next.IsDefined() && next.IsScalar()) {
      YAML::Node expanded(YAML::NodeType::Map);
      expanded["preset"] = next.Scalar();
      cur[parts[i]]      = expanded;
      next               = cur[parts[i]];
    }
    if (next.IsDefined() && !next.IsNull() && !next.IsMap())
      throw InputError(file + ": --set " + path + ": '" + walked + "' is not a mapping");
    if (!next.IsDefined() || next.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next          = cur[parts[i]];
    }
    cur.reset(next);
  }
  cur[parts.back()] = value;
}

// Unified memory and explicit offload cannot both decide where a category lives.
void check_memory_against_offload(const ExperimentSpec& spec, ParamReader& memory)
{
  auto clash = [&](MemCategory c, bool offloaded, const std::string& offload_key) {
    if (offloaded && spec.memory.is_managed(c))
      memory.fail(spec.memory.managed.count() + 1 == mem_category_count ? "mode" : "managed",
                  std::string(mem_category_name(c)) + " are both managed (unified memory) and offloaded by " +
                      offload_key + "; choose one");
  };
  if (spec.serving) {
    clash(MemCategory::weights, spec.inference.weights_off.any(), "inference.offload");
    clash(MemCategory::kv_cache, spec.inference.kv_off.any(), "inference.offload");
    clash(MemCategory::activations, spec.inference.act_off.any(), "inference.offload.percent");
  } else {
    clash(MemCategory::optimizer, spec.training.offload_optimizer != OffloadTarget::none, "training.offload.optimizer");
    clash(MemCategory::weights, spec.training.offload_params != OffloadTarget::none, "training.offload.params");
  }
}

// workload.trace: a path, a glob or a list of them, each resolved against the spec's
// folder; the files in the order given (a glob's sorted), one per rank.
std::vector<std::string> read_trace_paths(ParamReader& workload, const std::string& spec_dir)
{
  YAML::Node n = workload.take("trace", "path, glob or list of them",
                               "PyTorch profiler traces (Chrome trace JSON, .json or .json.gz), one per rank", "");
  std::vector<std::string> patterns;
  if (n.IsDefined() && n.IsScalar())
    patterns.push_back(n.Scalar());
  else if (n.IsDefined() && n.IsSequence())
    for (const YAML::Node& e : n) {
      if (!e.IsScalar())
        workload.fail("trace", "each entry is a path or a glob");
      patterns.push_back(e.Scalar());
    }
  else
    workload.fail("trace", "expected a path, a glob or a list of them (e.g. trace: rank-*.json.gz)");
  if (patterns.empty())
    workload.fail("trace", "the list is empty; name at least one trace");
  std::vector<std::string> files;
  for (const std::string& p : patterns) {
    std::string full =
        std::filesystem::path(p).is_absolute() || spec_dir.empty() ? p : (std::filesystem::path(spec_dir) / p).string();
    if (full.find_first_of("*?[") == std::string::npos) {
      files.push_back(full);
      continue;
    }
    glob_t g{};
    int rc = ::glob(full.c_str(), 0, nullptr, &g);
    std::vector<std::string> found;
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i)
        found.push_back(g.gl_pathv[i]);
    globfree(&g);
    if (found.empty())
      workload.fail("trace", "no file matches '" + p + "'");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  if (files.size() > 100000)
    workload.fail("trace", std::to_string(files.size()) + " files; at most 100,000 ranks");
  return files;
}

} // namespace

ExperimentSpec load_spec(const std::string& path, const std::vector<std::string>& overrides)
{
  std::string text = read_text_file(path, "spec file");
  std::string dir  = std::filesystem::path(path).parent_path().string();
  return parse_spec(text, path, dir, overrides);
}

ExperimentSpec parse_spec(const std::string& yaml_text, const std::string& file, const std::string& spec_dir,
                          const std::vector<std::string>& overrides)
{
  YAML::Node root = parse_yaml(yaml_text, file);
  if (!root.IsDefined() || root.IsNull())
    root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) // --set into a scalar or list threw yaml-cpp's BadSubscript (exit 3)
    throw InputError(file + ": a spec is a mapping with the sections hardware, model, and training or inference");
  auto overridden = std::make_shared<std::vector<std::string>>();
  for (const auto& o : overrides) {
    apply_override(root, file, o);
    overridden->push_back(o.substr(0, o.find('=')));
  }

  ExperimentSpec spec;
  spec.file = file;
  spec.text = overrides.empty() ? yaml_text : YAML::Dump(root) + "\n";
  ParamReader top(root, file, "", overridden);
  if (top.has("workload")) {
    if (top.has("model") || top.has("training") || top.has("inference") || top.has("memory"))
      throw InputError(file + ": a spec with `workload` (a recorded trace) takes only the section hardware besides it");
    ParamReader hw = top.section("hardware", "the cluster: node preset, node count, network", "");
    spec.cluster   = read_hardware_section(hw, spec.collective_algorithm, spec_dir);
    refuse_unused_estimates(hw, spec.cluster.node.gpu, /*generated_step=*/false);
    ParamReader workload = top.section("workload", "a recorded workload to replay instead of a generated step");
    spec.trace_ranks     = static_cast<int>(
        workload.integer("ranks", 0,
                             "ranks to replay: the job's recorded world_size, or more as data-parallel replicas of the "
                                 "traced ranks, their NCCL collectives resized to the new group",
                             0, "the recorded world_size", 1'000'000));
    spec.trace_recorded_on = workload.text(
        "recorded_on", "", "GPU preset the traces were recorded on; by default the one their deviceProperties name");
    if (!spec.trace_recorded_on.empty())
      gpu_preset(spec.trace_recorded_on, workload.location("recorded_on"));
    spec.traces = read_trace_paths(workload, spec_dir);
    workload.finish();
    top.finish();
    return spec;
  }
  if (!top.has("hardware") || !top.has("model") || top.has("training") == top.has("inference"))
    throw InputError(file + ": a spec needs the sections hardware, model, and one of training or inference "
                            "(or hardware and workload)");
  ParamReader hw = top.section("hardware", "the cluster: node preset, node count, network", "");
  spec.cluster   = read_hardware_section(hw, spec.collective_algorithm, spec_dir);
  refuse_unused_estimates(hw, spec.cluster.node.gpu, /*generated_step=*/true);
  ParamReader model  = top.section("model", "the transformer: preset, hf_config or explicit shape", "");
  spec.model         = read_model_section(model, spec_dir);
  ParamReader memory = top.section("memory", "explicit memory, or CUDA unified memory and its hints");
  spec.memory        = read_memory_section(memory, spec.cluster.node.gpu);
  spec.serving       = top.has("inference");
  const GpuSpec& gpu = spec.cluster.node.gpu;
  if (spec.serving) {
    ParamReader inference = top.section("inference", "serving or offline generation: requests, batching, KV cache", "");
    spec.inference =
        read_inference_section(inference, spec.cluster.total_gpus(), spec.model, spec.cluster.node.gpu, spec_dir);
    spec.inference.record_tensor_accesses = spec.memory.enabled();
    spec.inference.managed_weights        = spec.memory.is_managed(MemCategory::weights);
    spec.inference.managed_activations    = spec.memory.is_managed(MemCategory::activations);
    spec.inference.managed_kv             = spec.memory.is_managed(MemCategory::kv_cache);
    spec.inference.fp4_compute            = gpu.supports(Dtype::fp4);
    top.finish();
    check_memory_against_offload(spec, memory);
    for (Dtype d : {spec.inference.act_dtype, spec.inference.gemm_dtype()})
      if (!gpu.supports(d))
        inference.fail("weight_dtype", std::string(dtype_name(d)) + " compute is not supported by " + gpu.id +
                                           " (fp16 weights compute in fp16, bf16 in bf16, fp8 in fp8)");
    return spec;
  }
  ParamReader training = top.section("training", "one training step: batch, precision, optimizer, parallelism", "");
  spec.training        = read_training_section(training, spec.cluster.total_gpus(), spec.model);
  if (is_paged(spec.training.optimizer)) {
    // bitsandbytes' get_paged: the states in cudaMallocManaged memory, each prefetched to
    // the GPU before its update (prefetch_state); the driver evicts them when HBM runs short.
    const bool only_states = spec.memory.managed.none();
    spec.memory.managed.set(static_cast<size_t>(MemCategory::optimizer));
    spec.memory.explicit_through_allocator = only_states;
    if (only_states && !memory.has("prefetch"))
      spec.memory.prefetch = "layer";
  }
  spec.training.record_tensor_accesses = spec.memory.enabled();
  if (!spec.training.allocator.empty() && !allocator_registry().entries().count(spec.training.allocator))
    training.fail("allocator", "unknown allocator '" + spec.training.allocator + "'; one of: " +
                                   join(allocator_registry().names(), ", ") + " (see `memwall list allocators`)");
  top.finish();
  check_memory_against_offload(spec, memory);

  if (!gpu.supports(spec.training.precision)) {
    std::string have;
    for (const auto& [d, f] : gpu.peak_flops)
      have += (have.empty() ? "" : ", ") + std::string(dtype_name(d));
    training.fail("precision", std::string(dtype_name(spec.training.precision)) + " is not supported by " + gpu.id +
                                   "; it supports: " + have);
  }
  return spec;
}

} // namespace memwall

#include "sim/spec/SpecParams.hpp"

#include "sim/spec/ExperimentSpec.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

// Every implementation made with its defaults documents the keys it reads, whether or
// not a spec above picks it.
template <typename Factory>
void describe_every(const Registry<Factory>& registry)
{
  for (const std::string& name : registry.names())
    registry.describe(name);
}

} // namespace

void describe_every_implementation()
{
  describe_every(training_stack_registry());
  describe_every(pipeline_schedule_registry());
  describe_every(token_dispatcher_registry());
  describe_every(inference_engine_registry());
  describe_every(batch_scheduler_registry());
  describe_every(kv_manager_registry());
}

const std::vector<ParamDoc>& spec_param_docs()
{
  static const std::vector<ParamDoc> docs = [] {
    // Reading minimal specs records every parameter with its description and default;
    // inline node and GPU mappings bring in their schemas too.
    std::vector<ParamDoc> saved = param_docs();
    param_docs().clear();
    parse_spec("hardware: {node: {preset: dgx-a100}, gpu: {preset: a100-sxm4-80gb}}\nmodel: {preset: gpt2}\n"
               "training: {}\n",
               "(defaults)", "");
    parse_spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\ninference: {poisson: {}}\n",
               "(defaults)", "");
    parse_spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: rank0.json.gz}\n", "(defaults)", "");
    describe_every_implementation();
    std::vector<ParamDoc> out;
    for (const auto& d : param_docs())
      for (const char* section : {"hardware", "model", "training", "inference", "memory", "workload"})
        if (d.path.rfind(section, 0) == 0)
          out.push_back(d);
    param_docs() = std::move(saved);
    return out;
  }();
  return docs;
}

bool is_spec_key(const std::string& key)
{
  for (const auto& d : spec_param_docs())
    if (d.path == key || d.path.rfind(key + ".", 0) == 0)
      return true;
  return false;
}

} // namespace memwall

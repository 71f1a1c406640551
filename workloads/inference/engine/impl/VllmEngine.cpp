// vLLM: the fused kernels InferenceKernels plans, and its KV budget.
#include "workloads/inference/engine/InferenceEngine.hpp"

namespace memwall {
namespace {

class VllmEngine : public InferenceEngine {
public:
  std::string default_scheduler(const std::string& source) const override
  {
    return source == "batch" ? "static" : "continuous";
  }
  int64_t default_block_size() const override { return 16; }
  std::string summary_prefix() const override { return ""; }
  void check(ParamReader&, const InferenceConfig&, const ModelSpec&) const override {}
  void plan(const ModelSpec&, const InferenceConfig&, const std::vector<SeqWork>&, IterationKernels&) const override {}
  // gpu_memory_utilization of the memory, less what the profile run found taken. Not the
  // CUDA context: vLLM 0.1 (the paper's) takes total x utilization -
  // torch.cuda.max_memory_allocated(), and today's worker subtracts what its profile run
  // added to the memory snapshot taken after CUDA initialised (weights, the torch peak,
  // non-torch growth); the context lives in the 1 - utilization left over.
  double kv_budget(double memory, double utilization, double used) const override
  {
    return memory * utilization - used;
  }
};

const bool registered = inference_engine_registry().add(
    "vllm",
    "vLLM: fused kernels (norms and adds inside the GEMMs, attention over paged KV), continuous batching, a KV "
    "budget of gpu_memory_utilization less the weights and the profile run's activation peak",
    [] { return std::make_unique<VllmEngine>(); });

} // namespace
} // namespace memwall

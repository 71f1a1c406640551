// vLLM: the fused kernels InferenceKernels plans, and its KV budget.
#include "workloads/inference/engine/InferenceEngine.hpp"

#include <algorithm>
#include <cctype>

namespace memwall {
namespace {

class VllmEngine : public InferenceEngine {
public:
  std::string default_scheduler(const std::string& source) const override
  {
    return source == "batch" ? "static" : "continuous";
  }
  int64_t default_block_size() const override { return 16; }
  // vLLM's EngineArgs.get_batch_defaults (the V1 engine, 0.9 to 0.11): chunked prefill
  // always; on a GPU of 70 GiB or more whose name is not an A100's (H100, H200, MI300X;
  // PR #17885 found the larger budget slower on A100s) 16,384 tokens per iteration for the
  // offline LLM class and 8,192 for the API server, 1,024 sequences; else 8,192 and 2,048
  // tokens, 256 sequences. A fixed batch is the LLM class's job; arrivals, a server's.
  BatchDefaults batch_defaults(const GpuSpec& gpu, const std::string& source, int64_t) const override
  {
    std::string name = gpu.name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    bool large   = gpu.memory_bytes >= 70.0 * (1ull << 30) && name.find("a100") == std::string::npos;
    bool offline = source == "batch";
    BatchDefaults d;
    d.chunked_prefill        = true;
    d.max_num_batched_tokens = large ? (offline ? 16384 : 8192) : (offline ? 8192 : 2048);
    d.max_num_seqs           = large ? 1024 : 256;
    d.whose = std::string("vLLM's defaults for ") + (offline ? "offline LLM.generate" : "an API server") + " on " +
              (large ? "a GPU of 70 GiB or more" : "a GPU under 70 GiB or an A100");
    return d;
  }
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
    "budget of gpu_memory_utilization less the weights and the profile run's activation peak. Where a spec does not "
    "say: KV blocks of 16 tokens, scheduler static for a fixed batch else continuous, and the V1 engine's "
    "get_batch_defaults: chunked prefill; on a GPU of 70 GiB or more but an A100 1,024 sequences and 8,192 tokens "
    "per iteration for a server (16,384 offline), else 256 and 2,048 (8,192 offline)",
    [](ParamReader&) { return std::make_unique<VllmEngine>(); });

} // namespace
} // namespace memwall

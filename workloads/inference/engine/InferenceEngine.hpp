#pragma once
// How a serving engine runs the model: the kernels an iteration launches and the memory
// it leaves the KV cache. One interface, implementations in impl/ registered by name and
// chosen by `inference.engine`:
//   vllm  fused kernels (norms and residual adds inside the GEMMs, attention over paged
//         KV; InferenceKernels.hpp), continuous batching, a KV budget as each release's
//         start-up measured it (VllmRelease.hpp);
//   hf    Hugging Face transformers' generate() in eager PyTorch: each module's kernels
//         one by one (the inventories the training stacks use), a DynamicCache grown by
//         torch.cat every step, one static batch, no KV budget.
#include "base/ParamReader.hpp"
#include "base/Registry.hpp"
#include "hwmodels/GpuSpec.hpp"
#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/inference/engine/IterationKernels.hpp"
#include "workloads/inference/engine/StartupMemory.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

// How offloaded weights reach the GPU: a layer ahead on the copy streams, into two staging
// buffers (FlexGen), or each layer's just before it runs, on the compute stream (Accelerate's
// hooks and ZeRO-3's blocking fetch); from pinned or pageable host memory; the embedding
// table too, before the embedding and again before the tied head (ZeRO-3 offloads every
// parameter).
struct WeightStreaming {
  bool ahead  = true;
  bool pinned = true;
  bool tables = false;
};

class InferenceEngine : public Implementation {
public:
  // The batch scheduler a spec gets when it names none (`source`: batch, trace, poisson).
  virtual std::string default_scheduler(const std::string& source) const = 0;
  // Tokens per KV block when the spec gives no block_size.
  virtual int64_t default_block_size() const = 0;
  // Chunked prefill, tokens and sequences per iteration when the spec gives none, on `gpu`
  // for requests from `source` (batch: offline, all at once; trace, poisson: a server).
  virtual BatchDefaults batch_defaults(const GpuSpec& gpu, const std::string& source, int64_t max_model_len) const = 0;
  // Refuses, through `r`, the keys of the inference section the engine cannot honour.
  virtual void check(ParamReader& r, const InferenceConfig& c, const ModelSpec& m) const = 0;
  // Puts the engine's own kernels into `it` where they differ from InferenceKernels'
  // fused ones (the eager lists of IterationKernels).
  virtual void plan(const ModelSpec& m, const InferenceConfig& c, const std::vector<SeqWork>& batch,
                    IterationKernels& it) const = 0;
  // What the run's summary line says of the engine before the precisions ("" for the
  // default one).
  virtual std::string summary_prefix() const = 0;
  // How the spec's offloaded weights reach the GPU (FlexGen's way unless the engine says).
  virtual WeightStreaming weight_streaming(const InferenceConfig& c) const;
  // What the KV cache may take on one GPU, as the engine's start-up measures it.
  virtual StartupBudget kv_budget(const StartupInputs& in) const = 0;
  // Why the engine would not start with `kv_tokens` of KV in one worker's cache (whole
  // blocks of `block_tokens`; 1 where nothing is paged) for a max_model_len of
  // `max_model_len`, in its own words; "" when it starts.
  virtual std::string refuses_start(const StartupBudget& b, int64_t kv_tokens, int64_t block_tokens,
                                    int64_t max_model_len, double bytes_per_token) const = 0;
};

// Reads the engine's own keys from the `inference` section (vllm: engine_release).
using InferenceEngineFactory = std::function<std::unique_ptr<InferenceEngine>(ParamReader& inference)>;
Registry<InferenceEngineFactory>& inference_engine_registry();
// The engine called `name` (the registry's default when empty) with its defaults.
std::shared_ptr<const InferenceEngine> default_inference_engine(const std::string& name = "");

} // namespace memwall

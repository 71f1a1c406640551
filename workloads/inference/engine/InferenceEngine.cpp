#include "workloads/inference/engine/InferenceEngine.hpp"

#include "workloads/inference/config/InferenceConfig.hpp"

namespace memwall {

WeightStreaming InferenceEngine::weight_streaming(const InferenceConfig& c) const
{
  WeightStreaming w;
  w.pinned = c.offload_pinned;
  return w;
}

Registry<InferenceEngineFactory>& inference_engine_registry()
{
  static Registry<InferenceEngineFactory> registry("inference engine", "inference.engine", "engines", "vllm",
                                                   "inference");
  return registry;
}

std::shared_ptr<const InferenceEngine> default_inference_engine(const std::string& name)
{
  return inference_engine_registry().make_with_defaults(name);
}

} // namespace memwall

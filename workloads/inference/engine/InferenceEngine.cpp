#include "workloads/inference/engine/InferenceEngine.hpp"

namespace memwall {

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

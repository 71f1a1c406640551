#include "workloads/inference/engine/InferenceEngine.hpp"

namespace memwall {

Registry<InferenceEngineFactory>& inference_engine_registry()
{
  static Registry<InferenceEngineFactory> registry("inference engine", "inference.engine", "engines");
  return registry;
}

} // namespace memwall

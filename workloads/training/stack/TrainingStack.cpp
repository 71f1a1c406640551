#include "TrainingStack.hpp"

namespace memwall {

Registry<TrainingStackFactory>& training_stack_registry()
{
  static Registry<TrainingStackFactory> registry("training stack", "training.stack", "stacks");
  return registry;
}

OptimizerPass fused_adamw_pass(const TrainingConfig& cfg, const ModelStateBytes& b)
{
  return {"fused_adamw", optimizer_flops_per_param(cfg.optimizer), 2 * b.weights + b.gradients + 2 * b.optimizer, true,
          true, true};
}

} // namespace memwall

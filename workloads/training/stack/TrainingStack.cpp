#include "TrainingStack.hpp"

namespace memwall {

Registry<TrainingStackFactory>& training_stack_registry()
{
  static Registry<TrainingStackFactory> registry("training stack", "training.stack", "stacks");
  return registry;
}

} // namespace memwall

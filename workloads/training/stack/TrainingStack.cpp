#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {

Registry<TrainingStackFactory>& training_stack_registry()
{
  static Registry<TrainingStackFactory> registry("training stack", "training.stack", "stacks", "megatron", "training");
  return registry;
}

std::shared_ptr<const TrainingStack> default_training_stack(const std::string& name)
{
  return training_stack_registry().make_with_defaults(name);
}

double TrainingStack::persistent_elements(const std::vector<double>&) const { return 0; }

FetchPlan TrainingStack::plan_fetches(const std::vector<ParamUse>& uses) const
{
  FetchPlan plan(uses.size());
  for (size_t j = 0; j < uses.size(); ++j)
    for (size_t t = 0; t < uses[j].tensors->size(); ++t)
      plan[j].emplace_back(t, (*uses[j].tensors)[t]);
  return plan;
}

GatherPlan TrainingStack::plan_gathers(const std::vector<ParamUse>& uses, const TrainingConfig& cfg) const
{
  return prefetched_gathers(uses, static_cast<size_t>(cfg.zero_prefetch));
}

GatherPlan prefetched_gathers(const std::vector<ParamUse>& uses, size_t depth)
{
  GatherPlan plan(uses.size());
  for (size_t j = 0; j < uses.size(); ++j) {
    UseGather& g = plan[j];
    g.issued_at  = j > depth ? j - depth : 0;
    if (uses[j].elements <= 0) // no parameters, or every tensor persistent: nothing to gather
      continue;
    g.buffer = g.freed_after = j;
    if (j > depth && plan[j - 1 - depth].buffer != UseGather::none)
      g.waits_for = j - 1 - depth;
  }
  return plan;
}

ModelStateBytes master_weight_state_bytes(const TrainingConfig& cfg, const ModelSpec& m)
{
  ModelStateBytes b;
  b.weights   = cfg.mixed_precision() ? 2.0 : 4.0;
  b.gradients = b.weights;
  // Adam: fp32 momentum and variance; 8-bit Adam (Dettmers et al. 2022): one byte each;
  // SGD: fp32 momentum; Adafactor (Shazeer & Stern 2018): factored second moments, 4
  // bytes per row and column of each matrix, i.e. about 8/hidden bytes per parameter,
  // no momentum. Mixed precision adds an fp32 master copy (ZeRO's K = 12 for Adam).
  double states = 0;
  switch (cfg.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw: states = 8.0; break;
    case Optimizer::adam8bit: states = 2.0; break;
    case Optimizer::sgd: states = 4.0; break;
    case Optimizer::paged_adamw_32bit: // bitsandbytes' (stack pytorch; other stacks refuse them)
    case Optimizer::paged_adamw_8bit: states = 0.0; break;
    case Optimizer::adafactor: states = 8.0 / static_cast<double>(m.hidden); break;
  }
  b.optimizer = states + (cfg.mixed_precision() ? 4.0 : 0.0);
  return b;
}

OptimizerPass fused_adamw_pass(const TrainingConfig& cfg, const ModelStateBytes& b)
{
  return {"fused_adamw",
          optimizer_flops_per_param(cfg.optimizer),
          2 * b.weights + b.gradients + 2 * b.optimizer,
          true,
          true,
          true};
}

} // namespace memwall

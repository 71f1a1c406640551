// Liger's fused kernels in place of transformers' modules (the Trainer's
// use_liger_kernel): the same training, without the T x V logits and with fewer kept
// activations (its fused linear cross entropy, RMSNorm, SwiGLU, RoPE). Only where the stack
// runs transformers' modules of a model Liger patches.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class LigerKernels final : public Remedy {
public:
  int cost_order() const override { return 15; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    if (spec.training.liger_kernel || !spec.training.stack->runs_liger(spec.model))
      return {};
    return {{"Liger's kernels (use_liger_kernel)", {"training.liger_kernel=true"}}};
  }
};

const bool registered = remedy_registry().add(
    "liger-kernel", "Liger's fused kernels for transformers' modules (no logits held, fewer activations kept)",
    [] { return std::make_unique<LigerKernels>(); });

} // namespace
} // namespace memwall

// Activation recomputation: keep fewer activations and recompute them in the backward
// pass. Selective (attention scores only, Korthikanti et al. 2022) costs little; full
// (every layer's input only) costs about one more forward pass.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class Recomputation final : public Remedy {
public:
  Recomputation(Recompute level, int order) : level_(level), order_(order) {}
  int cost_order() const override { return order_; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    if (spec.training.recompute >= level_)
      return {};
    // Hugging Face's gradient checkpointing recomputes whole layers: no selective level.
    if (level_ == Recompute::selective && spec.training.stack && spec.training.stack->runs_transformers_modules())
      return {};
    const char* name = level_ == Recompute::selective ? "selective" : "full";
    return {{std::string("recompute ") + name, {std::string("training.recompute=") + name}}};
  }

private:
  Recompute level_;
  int order_;
};

const bool selective =
    remedy_registry().add("selective-recompute", "recompute the attention scores in the backward pass",
                          [] { return std::make_unique<Recomputation>(Recompute::selective, 20); });
const bool full =
    remedy_registry().add("full-recompute", "keep only each layer's input, recompute the layer in the backward pass",
                          [] { return std::make_unique<Recomputation>(Recompute::full, 30); });

} // namespace
} // namespace memwall

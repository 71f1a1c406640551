// Fewer bytes per number: bf16 mixed precision instead of fp32 (activations and
// gradients halve), then an 8-bit optimizer (Adam states from 8 to 2 bytes a parameter,
// Dettmers et al. 2022).
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class LowerPrecision final : public Remedy {
public:
  int cost_order() const override { return 40; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const TrainingConfig& t = spec.training;
    bool fp32 = t.precision == Dtype::fp32, adam = t.optimizer == Optimizer::adam || t.optimizer == Optimizer::adamw;
    std::vector<RemedyTry> out;
    if (fp32)
      out.push_back({"bf16 mixed precision", {"training.precision=bf16"}});
    if (adam)
      out.push_back({"8-bit Adam", {"training.optimizer=adam8bit"}});
    if (fp32 && adam)
      out.push_back(
          {"bf16 mixed precision and 8-bit Adam", {"training.precision=bf16", "training.optimizer=adam8bit"}});
    return out;
  }
};

const bool registered =
    remedy_registry().add("lower-precision", "bf16 mixed precision instead of fp32, then an 8-bit optimizer",
                          [] { return std::make_unique<LowerPrecision>(); });

} // namespace
} // namespace memwall

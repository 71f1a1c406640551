// Smaller micro-batch, same global batch through more gradient-accumulation steps:
// activations shrink with the micro-batch, the optimizer step is unchanged.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class SmallerMicroBatch final : public Remedy {
public:
  int cost_order() const override { return 10; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const TrainingConfig& t = spec.training;
    int64_t per_replica     = t.global_batch / t.dp;
    std::vector<RemedyTry> out; // largest first: the first that fits loses the least
    for (int64_t mb = t.micro_batch - 1; mb >= 1; --mb)
      if (per_replica % mb == 0)
        out.push_back(
            {"micro_batch " + std::to_string(mb) + " (" + std::to_string(per_replica / mb) + " micro-batches per step)",
             {"training.micro_batch=" + std::to_string(mb)}});
    return out;
  }
};

const bool registered =
    remedy_registry().add("smaller-micro-batch", "smaller micro-batch, same global batch by gradient accumulation",
                          [] { return std::make_unique<SmallerMicroBatch>(); });

} // namespace
} // namespace memwall

// A higher ZeRO stage shards optimizer states (1), then gradients (2), then parameters
// (3) over the data-parallel replicas (Rajbhandari et al. 2020); it saves nothing at dp 1.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class HigherZero final : public Remedy {
public:
  int cost_order() const override { return 50; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    std::vector<RemedyTry> out;
    if (spec.training.dp < 2)
      return out;
    for (int z = spec.training.zero + 1; z <= 3; ++z)
      out.push_back({"ZeRO-" + std::to_string(z), {"training.zero=" + std::to_string(z)}});
    return out;
  }
};

const bool registered =
    remedy_registry().add("higher-zero", "shard optimizer states, gradients, then parameters over data-parallel ranks",
                          [] { return std::make_unique<HigherZero>(); });

} // namespace
} // namespace memwall

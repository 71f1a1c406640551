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
    ShardingStack stack = sharding_stack(spec); // plain DDP has no ZeRO: DeepSpeed's
    for (int z = spec.training.zero + 1; z <= 3; ++z) {
      std::vector<std::string> keys = stack.overrides;
      keys.push_back("training.zero=" + std::to_string(z));
      out.push_back({stack.change + "ZeRO-" + std::to_string(z), keys});
    }
    return out;
  }
};

const bool registered =
    remedy_registry().add("higher-zero", "shard optimizer states, gradients, then parameters over data-parallel ranks",
                          [] { return std::make_unique<HigherZero>(); });

} // namespace
} // namespace memwall

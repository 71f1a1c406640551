// ZeRO-Offload: optimizer states and the update in host RAM (Ren et al. 2021), then
// ZeRO-Infinity's parameter offload to host RAM or NVMe (Rajbhandari et al. 2021). The
// cost is PCIe traffic every step.
#include "app/advise/Remedy.hpp"

#include <algorithm>

namespace memwall {
namespace {

class OptimizerOffload final : public Remedy {
public:
  int cost_order() const override { return 60; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const TrainingConfig& t = spec.training;
    std::vector<RemedyTry> out;
    if (t.pp > 1)
      return out; // offload does not combine with pipeline stages
    // ZeRO-Offload as DeepSpeed documents it: stage 2 (gradients go to the host as they
    // are reduced); a spec already at 3 stays there. Host buffers pinned, as the Trainer's
    // documented ZeRO-2 and ZeRO-3 offload configs set them (pin_memory: true): pageable
    // ones are staged through the driver by one CPU thread.
    ShardingStack stack = sharding_stack(spec);
    auto with_stack     = [&](std::string change, std::vector<std::string> keys) {
      keys.insert(keys.begin(), stack.overrides.begin(), stack.overrides.end());
      return RemedyTry{stack.change + change, keys};
    };
    int stage          = std::max(t.zero, 2);
    std::string pinned = "training.offload.pinned=true";
    if (t.offload_optimizer == OffloadTarget::none)
      out.push_back(with_stack("optimizer offload to pinned host RAM" +
                                   (stage != t.zero ? " (ZeRO-" + std::to_string(stage) + ")" : std::string()),
                               {"training.zero=" + std::to_string(stage), "training.offload.optimizer=cpu", pinned}));
    if (t.offload_params == OffloadTarget::none)
      out.push_back(
          with_stack("optimizer and parameter offload to pinned host RAM (ZeRO-3)",
                     {"training.zero=3", "training.offload.optimizer=cpu", "training.offload.params=cpu", pinned}));
    return out;
  }
};

const bool registered = remedy_registry().add(
    "optimizer-offload", "optimizer states (then parameters) in host RAM, ZeRO-Offload / ZeRO-Infinity",
    [] { return std::make_unique<OptimizerOffload>(); });

} // namespace
} // namespace memwall

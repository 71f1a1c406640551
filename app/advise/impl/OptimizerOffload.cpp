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
    std::string zero = "training.zero=" + std::to_string(std::max(t.zero, 1));
    if (t.offload_optimizer == OffloadTarget::none)
      out.push_back({"optimizer offload to host RAM" + std::string(t.zero == 0 ? " (ZeRO-1)" : ""),
                     {zero, "training.offload.optimizer=cpu"}});
    if (t.offload_params == OffloadTarget::none)
      out.push_back({"optimizer and parameter offload to host RAM (ZeRO-3)",
                     {"training.zero=3", "training.offload.optimizer=cpu", "training.offload.params=cpu"}});
    return out;
  }
};

const bool registered = remedy_registry().add(
    "optimizer-offload", "optimizer states (then parameters) in host RAM, ZeRO-Offload / ZeRO-Infinity",
    [] { return std::make_unique<OptimizerOffload>(); });

} // namespace
} // namespace memwall

// FlexGen-style offload: part or all of every layer's weights, then the KV cache, in
// host RAM, streamed over PCIe each iteration (Sheng et al. 2023). Slowest; last.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class ServingOffload final : public Remedy {
public:
  int cost_order() const override { return 60; }
  bool for_serving() const override { return true; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const InferenceConfig& c = spec.inference;
    std::vector<RemedyTry> out;
    if (!c.weights_off.any()) {
      out.push_back({"half of the weights in host RAM",
                     {"inference.offload.weights=cpu", "inference.offload.weights_fraction=0.5"}});
      out.push_back(
          {"all weights in host RAM", {"inference.offload.weights=cpu", "inference.offload.weights_fraction=1.0"}});
    }
    if (!c.kv_off.any())
      out.push_back(
          {"all weights and the KV cache in host RAM",
           {"inference.offload.weights=cpu", "inference.offload.weights_fraction=1.0", "inference.offload.kv=cpu"}});
    return out;
  }
};

const bool registered = remedy_registry().add("offload", "weights, then the KV cache, in host RAM (FlexGen-style)",
                                              [] { return std::make_unique<ServingOffload>(); });

} // namespace
} // namespace memwall

// Tensor parallelism over more GPUs of the node: weights and KV heads split tp ways.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class ServingTensorParallel final : public Remedy {
public:
  int cost_order() const override { return 50; }
  bool for_serving() const override { return true; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    std::vector<RemedyTry> out;
    for (int64_t tp = spec.inference.tp * 2; tp <= spec.cluster.node.gpus; tp *= 2)
      out.push_back({"tp " + std::to_string(tp) + " (" + std::to_string(tp) + " GPUs)",
                     {"inference.tp=" + std::to_string(tp), "hardware.gpus_per_node=" + std::to_string(tp)}});
    return out;
  }
};

const bool registered =
    remedy_registry().add("tensor-parallel", "split weights and KV heads over more GPUs of the node",
                          [] { return std::make_unique<ServingTensorParallel>(); });

} // namespace
} // namespace memwall

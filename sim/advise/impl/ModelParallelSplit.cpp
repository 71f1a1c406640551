// A different tensor x pipeline split of the same GPUs: each GPU holds 1/(tp pp) of the
// layers' weights, gradients and optimizer states, at the price of tp all-reduces
// inside a node and pipeline bubbles.
#include "advise/Remedy.hpp"

namespace memwall {
namespace {

class ModelParallelSplit final : public Remedy {
public:
  int cost_order() const override { return 70; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const TrainingConfig& t = spec.training;
    const int64_t gpus      = t.gpus();
    std::vector<RemedyTry> out;
    // More model parallelism, least first; tp stays inside a node.
    for (int64_t factor = 2; factor <= gpus / (t.tp * t.pp); factor *= 2) {
      for (int64_t tp_factor = factor; tp_factor >= 1; tp_factor /= 2) {
        int64_t tp = t.tp * tp_factor, pp = t.pp * (factor / tp_factor);
        if (tp > spec.cluster.gpus_per_node || gpus % (tp * pp) != 0)
          continue;
        out.push_back({"tp " + std::to_string(tp) + " x pp " + std::to_string(pp) + " x dp " +
                           std::to_string(gpus / (tp * pp)),
                       {"training.tp=" + std::to_string(tp), "training.pp=" + std::to_string(pp),
                        "training.dp=" + std::to_string(gpus / (tp * pp))}});
        if (out.size() >= 6)
          return out;
      }
    }
    return out;
  }
};

const bool registered = remedy_registry().add(
    "model-parallel-split", "more tensor or pipeline parallelism on the same GPUs",
    [] { return std::make_unique<ModelParallelSplit>(); });

} // namespace
} // namespace memwall

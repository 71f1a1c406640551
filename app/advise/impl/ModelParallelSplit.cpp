// A different tensor x pipeline split of the same GPUs: each GPU holds 1/(tp pp) of the
// layers' weights, gradients and optimizer states, at the price of tp all-reduces
// inside a node and pipeline bubbles. Context parallelism stays as it is; expert
// parallelism shrinks to what the new ranks of a stage can fold (an MoE layer under tp
// needs sequence parallelism). An etp other than tp stays (it divides every larger tp);
// etp = tp is taken as the default, which follows tp.
#include "app/advise/Remedy.hpp"

#include <numeric>

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
    for (int64_t factor = 2; factor <= gpus / (t.tp * t.pp * t.cp); factor *= 2) {
      for (int64_t tp_factor = factor; tp_factor >= 1; tp_factor /= 2) {
        int64_t tp = t.tp * tp_factor, pp = t.pp * (factor / tp_factor);
        if (tp > spec.cluster.gpus_per_node || gpus % (tp * pp * t.cp) != 0)
          continue;
        const int64_t dp = gpus / (tp * pp * t.cp);
        RemedyTry r{"tp " + std::to_string(tp) + " x pp " + std::to_string(pp) + " x dp " + std::to_string(dp),
                    {"training.tp=" + std::to_string(tp), "training.pp=" + std::to_string(pp),
                     "training.dp=" + std::to_string(dp)}};
        if (t.ep > 1) {
          const int64_t etp = t.etp == t.tp ? tp : t.etp;
          const int64_t ep  = std::gcd(t.ep, tp * t.cp * dp / etp);
          r.change += " (ep " + std::to_string(ep) + ")";
          r.overrides.push_back("training.ep=" + std::to_string(ep));
        }
        if (tp > 1 && spec.model.moe.enabled())
          r.overrides.push_back("training.sp=true");
        out.push_back(std::move(r));
        if (out.size() >= 6)
          return out;
      }
    }
    return out;
  }
};

const bool registered =
    remedy_registry().add("model-parallel-split", "more tensor or pipeline parallelism on the same GPUs",
                          [] { return std::make_unique<ModelParallelSplit>(); });

} // namespace
} // namespace memwall

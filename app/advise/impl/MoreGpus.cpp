// More GPUs with ZeRO-3: every GPU added takes a share of the parameters, gradients and
// optimizer states. Fills the node first, then doubles the nodes; the global batch
// stays, the micro-batch shrinks where the replicas would outnumber it.
#include "app/advise/Remedy.hpp"

#include <algorithm>

namespace memwall {
namespace {

class MoreGpus final : public Remedy {
public:
  int cost_order() const override { return 80; }
  bool for_serving() const override { return false; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const TrainingConfig& t = spec.training;
    const ClusterSpec& c    = spec.cluster;
    std::vector<RemedyTry> out;
    ShardingStack stack = sharding_stack(spec);
    for (int nodes = c.nodes; out.size() < 4 && nodes <= c.nodes * 16; nodes *= 2) {
      int per_node = c.node.gpus;
      int64_t gpus = static_cast<int64_t>(nodes) * per_node;
      if (gpus <= c.total_gpus() || gpus % (t.tp * t.pp) != 0)
        continue;
      int64_t dp = gpus / (t.tp * t.pp);
      if (t.global_batch % dp != 0)
        break; // fewer sequences than replicas
      int64_t mb = std::min(t.micro_batch, t.global_batch / dp);
      while ((t.global_batch / dp) % mb != 0)
        --mb;
      std::vector<std::string> keys = stack.overrides; // plain DDP has no ZeRO: DeepSpeed's
      keys.insert(keys.end(), {"hardware.nodes=" + std::to_string(nodes),
                               "hardware.gpus_per_node=" + std::to_string(per_node), "training.zero=3",
                               "training.dp=" + std::to_string(dp), "training.micro_batch=" + std::to_string(mb)});
      out.push_back({stack.change + std::to_string(gpus) + " GPUs (" + std::to_string(nodes) + " x " + c.node.id +
                         "), ZeRO-3, dp " + std::to_string(dp) +
                         (mb != t.micro_batch ? ", micro_batch " + std::to_string(mb) : ""),
                     keys});
    }
    return out;
  }
};

const bool registered = remedy_registry().add("more-gpus", "more GPUs (a full node, then twice the nodes) with ZeRO-3",
                                              [] { return std::make_unique<MoreGpus>(); });

} // namespace
} // namespace memwall

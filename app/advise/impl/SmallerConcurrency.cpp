// Fewer sequences at once: less KV cache and activation memory per iteration, paid for
// in throughput.
#include "app/advise/Remedy.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include <algorithm>

namespace memwall {
namespace {

class SmallerConcurrency final : public Remedy {
public:
  int cost_order() const override { return 10; }
  bool for_serving() const override { return true; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    const InferenceConfig& c = spec.inference;
    int64_t now = std::min<int64_t>(c.scheduler->limits().max_num_seqs, static_cast<int64_t>(c.requests.size()));
    std::vector<RemedyTry> out;
    for (int64_t n = now / 2; n >= 1 && out.size() < 4; n /= 2)
      out.push_back({"max_num_seqs " + std::to_string(n), {"inference.max_num_seqs=" + std::to_string(n)}});
    return out;
  }
};

const bool registered = remedy_registry().add("smaller-concurrency", "fewer sequences batched at once (max_num_seqs)",
                                              [] { return std::make_unique<SmallerConcurrency>(); });

} // namespace
} // namespace memwall

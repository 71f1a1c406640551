// Paged KV (vLLM): blocks allocated as tokens arrive instead of max_model_len reserved
// per sequence, so the waste of contiguous reservation (60-80 %, Kwon et al. 2023) goes.
#include "app/advise/Remedy.hpp"
#include "workloads/inference/kv/KvManager.hpp"

namespace memwall {
namespace {

class PagedKv final : public Remedy {
public:
  int cost_order() const override { return 30; }
  bool for_serving() const override { return true; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    if (!spec.inference.kv_manager->reserves_whole_context())
      return {};
    return {{"paged KV cache (blocks of 16 tokens)", {"inference.kv_manager=paged"}}};
  }
};

const bool registered = remedy_registry().add("paged-kv", "paged KV cache instead of contiguous reservation",
                                              [] { return std::make_unique<PagedKv>(); });

} // namespace
} // namespace memwall

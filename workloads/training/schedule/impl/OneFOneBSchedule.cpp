// `1f1b` (PipeDream-Flush, Narayanan et al. 2021): stage p runs p' = P - p - 1 warm-up
// forwards, then alternates one forward and one backward, then drains the remaining
// backwards. Stage p holds at most P - p micro-batches of activations (the first stage
// P); the bubble is the same (p-1)/m as GPipe.
#include "workloads/training/schedule/PipelineSchedule.hpp"

#include <algorithm>

namespace memwall {
namespace {

class OneFOneBSchedule : public PipelineSchedule {
public:
  std::vector<PipelineSlot> order(int64_t stage, int64_t stages, int64_t, int64_t micro_batches) const override
  {
    int64_t warmup = std::min(stages - stage - 1, micro_batches);
    std::vector<PipelineSlot> slots;
    for (int64_t mb = 0; mb < warmup; ++mb)
      slots.push_back({mb, 0, true});
    for (int64_t i = 0; i < micro_batches - warmup; ++i) {
      slots.push_back({warmup + i, 0, true});
      slots.push_back({i, 0, false});
    }
    for (int64_t mb = micro_batches - warmup; mb < micro_batches; ++mb)
      slots.push_back({mb, 0, false});
    return slots;
  }
};

const bool registered = pipeline_schedule_registry().add(
    "1f1b", "warm-up forwards, then one forward one backward (PipeDream-Flush); default",
    [](ParamReader&) { return std::make_unique<OneFOneBSchedule>(); });

} // namespace
} // namespace memwall

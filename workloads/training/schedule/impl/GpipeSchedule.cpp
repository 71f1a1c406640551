// `gpipe` (Huang et al. 2019): every micro-batch's forward, then every backward. All m
// micro-batches' activations are alive at the end of the forwards; bubble (p-1)/m.
#include "workloads/training/schedule/PipelineSchedule.hpp"

namespace memwall {
namespace {

class GpipeSchedule : public PipelineSchedule {
public:
  std::vector<PipelineSlot> order(int64_t, int64_t, int64_t, int64_t micro_batches) const override
  {
    std::vector<PipelineSlot> slots;
    for (int64_t mb = 0; mb < micro_batches; ++mb)
      slots.push_back({mb, 0, true});
    for (int64_t mb = 0; mb < micro_batches; ++mb)
      slots.push_back({mb, 0, false});
    return slots;
  }
};

const bool registered =
    pipeline_schedule_registry().add("gpipe", "all forwards, then all backwards; holds m micro-batches of activations",
                                     [](ParamReader&) { return std::make_unique<GpipeSchedule>(); });

} // namespace
} // namespace memwall

// `interleaved` (Megatron-LM, Narayanan et al. 2021, §2.2.2): each stage holds v model
// chunks; micro-batches go through the chunks in groups of P, which divides the bubble
// by v: (p-1)/(v m). Needs m to be a multiple of P. The order is Megatron's
// forward_backward_pipelining_with_interleaving: (P - p - 1)*2 + (v - 1)*P warm-up
// forwards, then 1F1B, then the remaining backwards.
#include "workloads/training/schedule/PipelineSchedule.hpp"

#include <algorithm>

namespace memwall {
namespace {

class InterleavedSchedule : public PipelineSchedule {
public:
  std::vector<PipelineSlot> order(int64_t stage, int64_t stages, int64_t chunks, int64_t micro_batches) const override
  {
    int64_t total  = micro_batches * chunks;
    int64_t warmup = std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
    auto slot      = [&](int64_t k, bool forward) {
      int64_t in_group = k % (stages * chunks);
      int64_t chunk    = in_group / stages;
      if (!forward)
        chunk = chunks - 1 - chunk;
      int64_t mb = (k / (stages * chunks)) * stages + k % stages;
      return PipelineSlot{mb, chunk, forward};
    };
    std::vector<PipelineSlot> slots;
    for (int64_t k = 0; k < warmup; ++k)
      slots.push_back(slot(k, true));
    for (int64_t i = 0; i < total - warmup; ++i) {
      slots.push_back(slot(warmup + i, true));
      slots.push_back(slot(i, false));
    }
    for (int64_t k = total - warmup; k < total; ++k)
      slots.push_back(slot(k, false));
    return slots;
  }

  bool runs_chunks() const override { return true; }

  void check(const PipelineShape& s, const ParamReader& r) const override
  {
    if (s.chunks < 2)
      r.fail("virtual_stages", "the interleaved schedule needs virtual_stages >= 2");
    if (s.stages < 2)
      r.fail("pipeline_schedule", "the interleaved schedule needs pp >= 2");
    if (s.micro_batches % s.stages != 0)
      r.fail("pipeline_schedule", "the interleaved schedule needs the micro-batches per step (" +
                                      std::to_string(s.micro_batches) +
                                      ") to be a multiple of pp = " + std::to_string(s.stages));
  }
};

const bool registered = pipeline_schedule_registry().add(
    "interleaved", "Megatron's interleaved 1F1B over virtual_stages chunks per stage; bubble / v",
    [](ParamReader&) { return std::make_unique<InterleavedSchedule>(); });

} // namespace
} // namespace memwall

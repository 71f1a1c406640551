// `looped_bfs` (Lamy-Poirier 2023, "Breadth-First Pipeline Parallelism"; PyTorch's
// torch.distributed.pipelining.ScheduleLoopedBFS, torchtitan's `LoopedBFS`): each stage
// holds v model chunks and runs every micro-batch's forward through its first chunk,
// then through its second, ...; then the backwards chunk by chunk in reverse, each
// chunk's micro-batches last to first. A chunk's parameters are used m times in a row,
// which lets FSDP gather them once per chunk; the bubble is the interleaved schedule's
// (p-1)/(v m) when m >= P, but every micro-batch's activations of every chunk are
// alive at the end of the forwards, as in GPipe. Any v >= 1 and any m.
#include "workloads/training/schedule/PipelineSchedule.hpp"

namespace memwall {
namespace {

class LoopedBfsSchedule : public PipelineSchedule {
public:
  std::vector<PipelineSlot> order(int64_t, int64_t, int64_t chunks, int64_t micro_batches) const override
  {
    std::vector<PipelineSlot> slots;
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t mb = 0; mb < micro_batches; ++mb)
        slots.push_back({mb, chunk, true});
    for (int64_t chunk = chunks - 1; chunk >= 0; --chunk)
      for (int64_t mb = micro_batches - 1; mb >= 0; --mb)
        slots.push_back({mb, chunk, false});
    return slots;
  }

  bool runs_chunks() const override { return true; } // any v >= 1 and any m: nothing to refuse
};

const bool registered = pipeline_schedule_registry().add(
    "looped_bfs", "breadth-first over virtual_stages chunks (PyTorch's LoopedBFS); bubble / v, GPipe's activations",
    [](ParamReader&) { return std::make_unique<LoopedBfsSchedule>(); });

} // namespace
} // namespace memwall

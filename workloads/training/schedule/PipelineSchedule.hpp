#pragma once
// The order in which one pipeline stage runs the forward and backward passes of its
// model chunks over the micro-batches of a step. One interface, implementations in
// impl/ registered by name and chosen by `training.pipeline_schedule`; a new schedule
// (zero-bubble, ...) is one file there.
//
// Stage p of P holds chunks c = 0..v-1, i.e. virtual stages c*P + p. The generator turns
// the order into ops on the stage's compute stream; the cross-stage waits (activations
// forward, gradients backward) are flows, so the bubble emerges from the replay.
#include "base/Registry.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

struct PipelineSlot {
  int64_t microbatch = 0;
  int64_t chunk      = 0;
  bool forward       = true;
};

class PipelineSchedule {
public:
  virtual ~PipelineSchedule() = default;
  virtual std::vector<PipelineSlot> order(int64_t stage, int64_t stages, int64_t chunks, int64_t microbatches) const = 0;
};

using PipelineScheduleFactory = std::function<std::unique_ptr<PipelineSchedule>()>;

Registry<PipelineScheduleFactory>& pipeline_schedule_registry();

} // namespace memwall

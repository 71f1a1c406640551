#pragma once
// The order in which one pipeline stage runs the forward and backward passes of its
// model chunks over the micro-batches of a step. One interface, implementations in
// impl/ registered by name and chosen by `training.pipeline_schedule`; a new schedule
// is one file there: its order, the shapes it refuses, and its registration.
//
// Stage p of P holds chunks c = 0..v-1, i.e. virtual stages c*P + p. The generator turns
// the order into ops on the stage's compute stream; the cross-stage waits (activations
// forward, gradients backward) are flows, so the bubble emerges from the replay.
#include "base/ParamReader.hpp"
#include "base/Registry.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

struct PipelineSlot {
  int64_t micro_batch = 0;
  int64_t chunk       = 0;
  bool forward        = true;
};

// What a schedule is asked to run: P pipeline stages, v model chunks per stage
// (`virtual_stages`), m micro-batches per step.
struct PipelineShape {
  int64_t stages = 1, chunks = 1, micro_batches = 1;
};

class PipelineSchedule : public Implementation {
public:
  virtual std::vector<PipelineSlot> order(int64_t stage, int64_t stages, int64_t chunks,
                                          int64_t micro_batches) const = 0;
  // Whether a stage may hold several model chunks (virtual_stages > 1).
  virtual bool runs_chunks() const { return false; }
  // Refuses, through r.fail naming the key, a shape this schedule cannot run. The
  // default refuses chunks unless runs_chunks(), naming the schedules that run them.
  virtual void check(const PipelineShape& shape, const ParamReader& r) const;
};

// Reads the schedule's own keys from the `training` section (none so far).
using PipelineScheduleFactory = std::function<std::unique_ptr<PipelineSchedule>(ParamReader& training)>;

Registry<PipelineScheduleFactory>& pipeline_schedule_registry();
// The schedule called `name` with its defaults (one named on the command line).
std::shared_ptr<const PipelineSchedule> default_pipeline_schedule(const std::string& name);

} // namespace memwall

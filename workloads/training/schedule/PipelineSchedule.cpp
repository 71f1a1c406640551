#include "workloads/training/schedule/PipelineSchedule.hpp"

namespace memwall {

Registry<PipelineScheduleFactory>& pipeline_schedule_registry()
{
  static Registry<PipelineScheduleFactory> registry("pipeline schedule", "training.pipeline_schedule", "schedules");
  return registry;
}

} // namespace memwall

#include "workloads/training/schedule/PipelineSchedule.hpp"

namespace memwall {

Registry<PipelineScheduleFactory>& pipeline_schedule_registry()
{
  static Registry<PipelineScheduleFactory> registry("pipeline schedule", "training.pipeline_schedule", "schedules");
  return registry;
}

void PipelineSchedule::check(const PipelineShape& shape, const ParamReader& r) const
{
  if (shape.chunks == 1 || runs_chunks())
    return;
  std::string chunked;
  for (const std::string& name : pipeline_schedule_registry().names())
    if (pipeline_schedule_registry().make(name)->runs_chunks())
      chunked += (chunked.empty() ? "" : " or ") + name;
  r.fail("virtual_stages", "virtual_stages > 1 needs pipeline_schedule: " + chunked);
}

void check_pipeline_schedule(const std::string& name, const PipelineShape& shape, const ParamReader& r)
{
  pipeline_schedule_registry().make(name)->check(shape, r);
}

} // namespace memwall

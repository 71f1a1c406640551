#include "workloads/training/schedule/PipelineSchedule.hpp"

namespace memwall {

Registry<PipelineScheduleFactory>& pipeline_schedule_registry()
{
  static Registry<PipelineScheduleFactory> registry("pipeline schedule", "training.pipeline_schedule", "schedules",
                                                    "1f1b", "training");
  return registry;
}

std::shared_ptr<const PipelineSchedule> default_pipeline_schedule(const std::string& name)
{
  return pipeline_schedule_registry().make_with_defaults(name);
}

void PipelineSchedule::check(const PipelineShape& shape, const ParamReader& r) const
{
  if (shape.chunks == 1 || runs_chunks())
    return;
  std::string chunked;
  for (const std::string& name : pipeline_schedule_registry().names())
    if (default_pipeline_schedule(name)->runs_chunks())
      chunked += (chunked.empty() ? "" : " or ") + name;
  r.fail("virtual_stages", "virtual_stages > 1 needs pipeline_schedule: " + chunked);
}

} // namespace memwall

#include "PipelineSchedule.hpp"

#include "ParamReader.hpp"

namespace memwall {

std::map<std::string, PipelineScheduleInfo>& pipeline_schedule_registry()
{
  static std::map<std::string, PipelineScheduleInfo> registry;
  return registry;
}

bool register_pipeline_schedule(const std::string& name, const std::string& description, PipelineScheduleFactory make)
{
  pipeline_schedule_registry()[name] = {description, std::move(make)};
  return true;
}

std::unique_ptr<PipelineSchedule> make_pipeline_schedule(const std::string& name)
{
  auto& reg = pipeline_schedule_registry();
  auto it   = reg.find(name);
  if (it == reg.end()) {
    std::vector<std::string> names;
    for (const auto& [n, info] : reg)
      names.push_back(n);
    throw_unknown_preset("pipeline schedule", name, names, "training.pipeline_schedule", "schedules");
  }
  return it->second.make();
}

} // namespace memwall

// The pipeline schedule and its model chunks: 1F1B, or Megatron's interleaved 1F1B with
// every chunk count that splits a stage's layers (a smaller bubble for more
// point-to-point traffic, Narayanan et al. 2021 §2.2). GPipe keeps every micro-batch's
// activations for the same bubble as 1F1B, so it never wins and is not tried.
#include "app/optimize/LayoutAxis.hpp"
#include "base/InputError.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"

namespace memwall {
namespace {

class PipelineScheduleAxis final : public LayoutAxis {
public:
  int order() const override { return 80; }
  std::string key() const override { return "training.pipeline_schedule"; }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    if (l.t.pp == 1 || s.job.model.layers / l.t.pp < 2 || l.t.first_stage_layers > 0 || l.t.last_stage_layers > 0)
      return {"1f1b"}; // Megatron interleaves even splits only
    return {"1f1b", "interleaved"};
  }
  std::string value_of(const TrainingConfig& t) const override { return t.pipeline_schedule->name(); }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    l.t.pipeline_schedule = default_pipeline_schedule(value); // an unknown one: InputError listing them
    l.settings.emplace_back(key(), value);
  }
};

class VirtualStagesAxis final : public IntegerAxis {
public:
  VirtualStagesAxis() : IntegerAxis(85, "training.virtual_stages", &TrainingConfig::virtual_stages) {}
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    if (!l.t.pipeline_schedule->runs_chunks())
      return {"1"};
    std::vector<std::string> out;
    for (int64_t v : divisors(s.job.model.layers / l.t.pp))
      if (v > 1)
        out.push_back(std::to_string(v));
    return out;
  }
};

const bool schedule = layout_axis_registry().add("pipeline_schedule", "1f1b, or interleaved when pp > 1",
                                                 [] { return std::make_unique<PipelineScheduleAxis>(); });
const bool chunks   = layout_axis_registry().add("virtual_stages", "interleaved: divisors of a stage's layers",
                                                 [] { return std::make_unique<VirtualStagesAxis>(); });

} // namespace
} // namespace memwall

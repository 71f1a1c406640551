// The training stack: the spec's own unless --axis training.stack names others (each
// stack then brings its own ZeRO stages and offload to the axes after it).
#include "app/optimize/LayoutAxis.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

class StackAxis final : public LayoutAxis {
public:
  int order() const override { return 10; }
  std::string key() const override { return "training.stack"; }
  std::vector<std::string> values(const PartialLayout&, const SearchSpace& s) const override
  {
    return {s.job.training.stack->name()};
  }
  std::string value_of(const TrainingConfig& t) const override { return t.stack->name(); }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    // The spec's own keeps its keys; another (an unknown one: InputError listing them)
    // comes with its defaults, as the --set line that runs it gives it.
    if (!l.t.stack || value != l.t.stack->name())
      l.t.stack = default_training_stack(value);
    l.settings.emplace_back(key(), value);
  }
};

const bool added = layout_axis_registry().add("stack", "the training stack: the spec's own (--axis for others)",
                                              [] { return std::make_unique<StackAxis>(); });

} // namespace
} // namespace memwall

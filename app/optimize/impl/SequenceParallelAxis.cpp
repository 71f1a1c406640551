// Sequence parallelism inside the tp group: on or off whenever tp > 1 (it trades the
// all-reduces for reduce-scatters and all-gathers and splits the norms' activations).
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

class SequenceParallelAxis final : public LayoutAxis {
public:
  int order() const override { return 90; }
  std::string key() const override { return "training.sp"; }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace&) const override
  {
    if (l.t.tp == 1)
      return {"false"};
    return {"false", "true"};
  }
  std::string value_of(const TrainingConfig& t) const override { return std::string(t.sp ? "true" : "false"); }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    l.t.sp = axis_flag(key(), value);
    l.settings.emplace_back(key(), value);
  }
};

const bool added = layout_axis_registry().add("sp", "sequence parallelism: off and on when tp > 1",
                                              [] { return std::make_unique<SequenceParallelAxis>(); });

} // namespace
} // namespace memwall

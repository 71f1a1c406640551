// Activation recomputation: none, selective (the attention core, Korthikanti et al.
// 2022) or full (each layer from its input).
#include "app/optimize/LayoutAxis.hpp"
#include "base/InputError.hpp"

namespace memwall {
namespace {

class RecomputeAxis final : public LayoutAxis {
public:
  int order() const override { return 110; }
  std::string key() const override { return "training.recompute"; }
  std::vector<std::string> values(const PartialLayout&, const SearchSpace&) const override
  {
    return {"none", "selective", "full"};
  }
  std::string value_of(const TrainingConfig& t) const override
  {
    return std::string(t.recompute == Recompute::none        ? "none"
                       : t.recompute == Recompute::selective ? "selective"
                                                             : "full");
  }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    if (value == "none")
      l.t.recompute = Recompute::none;
    else if (value == "selective")
      l.t.recompute = Recompute::selective;
    else if (value == "full")
      l.t.recompute = Recompute::full;
    else
      throw InputError("--axis " + key() + ": '" + value + "' is not one of none, selective, full");
    l.settings.emplace_back(key(), value);
  }
};

const bool added = layout_axis_registry().add("recompute", "activation recomputation: none, selective, full",
                                              [] { return std::make_unique<RecomputeAxis>(); });

} // namespace
} // namespace memwall

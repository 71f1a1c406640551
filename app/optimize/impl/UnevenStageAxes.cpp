// Uneven pipeline splits: the first or the last stage with fewer layers than the others
// (Megatron-Core's --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-
// layers). The last stage also runs the output layer and the loss over the vocabulary; the
// first, under 1F1B, keeps the most micro-batches' activations; and a layer count that no
// stage count divides (61 layers on 16 stages) needs one. The last stage's axis offers the
// even split (0) where it exists and the largest lighter stage that leaves the rest even;
// the first stage's, a lighter first stage only where the stages divide no even split.
#include "app/optimize/LayoutAxis.hpp"
#include "base/InputError.hpp"

#include <charconv>

namespace memwall {
namespace {

class EndStageAxis final : public LayoutAxis {
public:
  EndStageAxis(int order, std::string key, int64_t TrainingConfig::*field, bool last)
      : order_(order), key_(std::move(key)), field_(field), last_(last)
  {}
  int order() const override { return order_; }
  std::string key() const override { return key_; }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    if (l.t.pp < 2)
      return {"0"};
    // The last stage's choice sees the first's: the stages and layers it left.
    int64_t layers = s.job.model.layers, stages = l.t.pp;
    if (last_ && l.t.first_stage_layers > 0) {
      layers -= l.t.first_stage_layers;
      stages -= 1;
    }
    // A lighter first stage only where no even split exists (61 layers on 16 stages): a
    // lighter last one is tried beside every even split, for its head and loss.
    std::vector<std::string> out;
    for (int64_t k : lighter_end_stage(layers, stages))
      if (last_ || layers % stages != 0)
        out.push_back(std::to_string(k));
    return out.empty() ? std::vector<std::string>{"0"} : out;
  }
  std::string value_of(const TrainingConfig& t) const override { return std::to_string(t.*field_); }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    int64_t v   = -1;
    auto [p, e] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (e != std::errc() || p != value.data() + value.size() || v < 0 || v > 1'000'000)
      throw InputError("--axis " + key_ + ": '" + value + "' is not a whole number from 0 (an even split) to 1e6");
    l.t.*field_ = v;
    l.settings.emplace_back(key_, value);
  }

private:
  int order_;
  std::string key_;
  int64_t TrainingConfig::*field_;
  bool last_;
};

const bool first =
    layout_axis_registry().add("first_stage_layers", "uneven pipeline: a lighter first stage, or 0 (even)", [] {
      return std::make_unique<EndStageAxis>(31, "training.first_stage_layers", &TrainingConfig::first_stage_layers,
                                            false);
    });
const bool last =
    layout_axis_registry().add("last_stage_layers", "uneven pipeline: a lighter last stage, or 0 (even)", [] {
      return std::make_unique<EndStageAxis>(32, "training.last_stage_layers", &TrainingConfig::last_stage_layers, true);
    });

} // namespace
} // namespace memwall

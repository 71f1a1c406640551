// Pipeline parallelism: stage counts that, with tp, divide the GPUs and split the layers
// evenly, or unevenly with a lighter first or last stage (UnevenStageAxes.cpp).
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

class PipelineParallelAxis final : public IntegerAxis {
public:
  PipelineParallelAxis() : IntegerAxis(30, "training.pp", &TrainingConfig::pp) {}
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    std::vector<std::string> out;
    int64_t layers = s.job.model.layers;
    for (int64_t p : divisors(s.gpus / l.t.tp))
      if (p <= layers && splits(layers, p))
        out.push_back(std::to_string(p));
    return out;
  }

private:
  // Whether some split the end-stage axes offer exists: even, a lighter first or last
  // stage, or both.
  static bool splits(int64_t layers, int64_t p)
  {
    for (int64_t f : lighter_end_stage(layers, p)) {
      if (f == 0 || p < 3)
        return true;
      if (!lighter_end_stage(layers - f, p - 1).empty())
        return true;
    }
    return false;
  }
};

const bool added = layout_axis_registry().add("pp", "pipeline stages: even or uneven splits of the layers",
                                              [] { return std::make_unique<PipelineParallelAxis>(); });

} // namespace
} // namespace memwall

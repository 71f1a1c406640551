// Pipeline parallelism: stage counts that split the layers evenly and, with tp, divide
// the GPUs (uneven splits are a spec's own choice, not searched).
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

class PipelineParallelAxis final : public IntegerAxis {
public:
  PipelineParallelAxis() : IntegerAxis(30, "training.pp", &TrainingConfig::pp) {}
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    std::vector<std::string> out;
    for (int64_t p : divisors(s.job.model.layers))
      if (s.gpus % (l.t.tp * p) == 0)
        out.push_back(std::to_string(p));
    return out;
  }
};

const bool added = layout_axis_registry().add("pp", "pipeline stages: even splits of the layers",
                                              [] { return std::make_unique<PipelineParallelAxis>(); });

} // namespace
} // namespace memwall

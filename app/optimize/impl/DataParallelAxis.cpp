// Data parallelism: the GPUs tp x pp x cp leave, written out so that every layout names
// its whole shape.
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

class DataParallelAxis final : public IntegerAxis {
public:
  DataParallelAxis() : IntegerAxis(50, "training.dp", &TrainingConfig::dp) {}
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    int64_t model = l.t.tp * l.t.pp * l.t.cp;
    if (s.gpus % model != 0)
      return {};
    return {std::to_string(s.gpus / model)};
  }
};

const bool added = layout_axis_registry().add("dp", "data parallelism: the GPUs tp x pp x cp leave",
                                              [] { return std::make_unique<DataParallelAxis>(); });

} // namespace
} // namespace memwall

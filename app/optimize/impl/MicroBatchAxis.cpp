// The micro-batch: every divisor of the sequences one replica takes per step
// (global_batch / dp), as Calculon's search takes them; a layout whose dp does not divide
// the global batch has none.
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

class MicroBatchAxis final : public IntegerAxis {
public:
  MicroBatchAxis() : IntegerAxis(70, "training.micro_batch", &TrainingConfig::micro_batch) {}
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    std::vector<std::string> out;
    int64_t batch = s.job.training.global_batch;
    if (batch % l.t.dp != 0)
      return out;
    for (int64_t m : divisors(batch / l.t.dp))
      out.push_back(std::to_string(m));
    return out;
  }
};

const bool added = layout_axis_registry().add("micro_batch", "micro-batch: divisors of global_batch / dp",
                                              [] { return std::make_unique<MicroBatchAxis>(); });

} // namespace
} // namespace memwall

// The ZeRO stage: those the stack runs as its own (Megatron-LM: DDP or its distributed
// optimizer, 0 and 1; DeepSpeed 0-3; FSDP 3), and only its first when nothing is
// replicated (cp x dp = 1: nothing to shard over).
#include "app/optimize/LayoutAxis.hpp"
#include "base/InputError.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

class ZeroStageAxis final : public LayoutAxis {
public:
  int order() const override { return 100; }
  std::string key() const override { return "training.zero"; }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace&) const override
  {
    std::vector<int> stages = l.t.stack->zero_stages();
    if (l.t.replicas() == 1)
      stages.resize(1);
    std::vector<std::string> out;
    for (int z : stages)
      out.push_back(std::to_string(z));
    return out;
  }
  std::string value_of(const TrainingConfig& t) const override { return std::to_string(t.zero); }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    if (value.size() != 1 || value[0] < '0' || value[0] > '3')
      throw InputError("--axis " + key() + ": '" + value + "' is not a ZeRO stage 0, 1, 2 or 3");
    l.t.zero = value[0] - '0';
    l.settings.emplace_back(key(), value);
  }
};

const bool added = layout_axis_registry().add("zero", "ZeRO stage: those the stack runs",
                                              [] { return std::make_unique<ZeroStageAxis>(); });

} // namespace
} // namespace memwall

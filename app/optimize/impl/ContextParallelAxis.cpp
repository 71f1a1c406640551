// Context parallelism: each sequence split over cp ranks. Tried while every rank keeps at
// least 4,096 tokens of a sequence: below that the K/V exchange around attention has
// little compute to hide behind, which is why Megatron-LM reserves it for long contexts
// (its context-parallel guide: sequences of 8K and more). --axis training.cp overrides.
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

constexpr int64_t min_tokens_per_rank = 4096;

class ContextParallelAxis final : public IntegerAxis {
public:
  ContextParallelAxis() : IntegerAxis(40, "training.cp", &TrainingConfig::cp) {}
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    std::vector<std::string> out;
    int64_t seq = s.job.training.seq_len;
    for (int64_t c : divisors(s.gpus / (l.t.tp * l.t.pp)))
      if (c == 1 || (seq % c == 0 && seq / c >= min_tokens_per_rank))
        out.push_back(std::to_string(c));
    return out;
  }
};

const bool added = layout_axis_registry().add("cp", "context parallelism: while each rank keeps 4,096 tokens or more",
                                              [] { return std::make_unique<ContextParallelAxis>(); });

} // namespace
} // namespace memwall

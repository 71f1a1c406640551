// Tensor parallelism: degrees that divide the attention heads and fit inside one node.
// Across nodes every layer's all-reduces would cross the NICs (Megatron-LM keeps tp in
// the NVLink domain, Narayanan et al. 2021 §3.3); --axis training.tp tries them anyway.
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

class TensorParallelAxis final : public IntegerAxis {
public:
  TensorParallelAxis() : IntegerAxis(20, "training.tp", &TrainingConfig::tp) {}
  std::vector<std::string> values(const PartialLayout&, const SearchSpace& s) const override
  {
    std::vector<std::string> out;
    for (int64_t t : divisors(s.gpus_per_node))
      if (s.gpus % t == 0 && s.job.model.heads % t == 0)
        out.push_back(std::to_string(t));
    return out;
  }
};

const bool added = layout_axis_registry().add("tp", "tensor parallelism: divisors of the heads within a node",
                                              [] { return std::make_unique<TensorParallelAxis>(); });

} // namespace
} // namespace memwall

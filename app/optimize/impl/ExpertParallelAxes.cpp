// Expert parallelism of a mixture-of-experts model (Megatron-Core's MoE folding): ep
// divides the experts and, with etp, the tp x cp x dp ranks of a stage; each expert split
// over etp = tp (the dense layers' way) or kept whole (etp 1, as DeepSeek-V3 and
// Mixtral recipes run it). Dense models have neither axis.
#include "app/optimize/LayoutAxis.hpp"

namespace memwall {
namespace {

bool moe(const SearchSpace& s) { return s.job.model.moe.enabled(); }

class ExpertParallelAxis final : public IntegerAxis {
public:
  ExpertParallelAxis() : IntegerAxis(60, "training.ep", &TrainingConfig::ep) {}
  bool applies(const SearchSpace& s) const override { return moe(s); }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const override
  {
    std::vector<std::string> out;
    for (int64_t e : divisors(s.job.model.moe.experts))
      if ((l.t.tp * l.t.cp * l.t.dp) % e == 0)
        out.push_back(std::to_string(e));
    return out;
  }
};

class ExpertTensorParallelAxis final : public IntegerAxis {
public:
  ExpertTensorParallelAxis() : IntegerAxis(65, "training.etp", &TrainingConfig::etp) {}
  bool applies(const SearchSpace& s) const override { return moe(s); }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace&) const override
  {
    std::vector<std::string> out;
    for (int64_t x : {int64_t{1}, l.t.tp})
      if ((l.t.tp * l.t.cp * l.t.dp) % (x * l.t.ep) == 0 && (out.empty() || out.back() != std::to_string(x)))
        out.push_back(std::to_string(x));
    return out;
  }
};

const bool ep  = layout_axis_registry().add("ep", "expert parallelism (MoE): divisors of the experts",
                                            [] { return std::make_unique<ExpertParallelAxis>(); });
const bool etp = layout_axis_registry().add("etp", "expert tensor parallelism (MoE): 1 or tp",
                                            [] { return std::make_unique<ExpertTensorParallelAxis>(); });

} // namespace
} // namespace memwall

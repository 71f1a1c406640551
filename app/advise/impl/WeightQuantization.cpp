// Weight-only quantization: int8 halves and int4 quarters fp16 weights (GPTQ/AWQ
// style), dequantized inside the GEMMs.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class WeightQuantization final : public Remedy {
public:
  int cost_order() const override { return 40; }
  bool for_serving() const override { return true; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    Dtype w = spec.inference.weight_dtype;
    std::vector<RemedyTry> out;
    if (w == Dtype::fp16 || w == Dtype::bf16)
      out.push_back({"int8 weights", {"inference.weight_dtype=int8"}});
    if (w != Dtype::int4)
      out.push_back({"int4 weights", {"inference.weight_dtype=int4"}});
    return out;
  }
};

const bool registered = remedy_registry().add("weight-quantization", "int8, then int4 weight-only quantization",
                                              [] { return std::make_unique<WeightQuantization>(); });

} // namespace
} // namespace memwall

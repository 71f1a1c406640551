// A quantized KV cache: fp8 or int8 halves the bytes per token of fp16 KV.
#include "app/advise/Remedy.hpp"

namespace memwall {
namespace {

class KvQuantization final : public Remedy {
public:
  int cost_order() const override { return 20; }
  bool for_serving() const override { return true; }
  std::vector<RemedyTry> tries(const ExperimentSpec& spec) const override
  {
    Dtype kv = spec.inference.kv_dtype;
    if (kv == Dtype::fp8 || kv == Dtype::int8 || kv == Dtype::int4)
      return {};
    return {{"fp8 KV cache", {"inference.kv_dtype=fp8"}}};
  }
};

const bool registered = remedy_registry().add("kv-quantization", "fp8 KV cache (half the bytes per token of fp16)",
                                              [] { return std::make_unique<KvQuantization>(); });

} // namespace
} // namespace memwall

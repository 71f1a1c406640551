// `contiguous`: every admitted request reserves max_model_len token slots at once, as
// serving systems did before paged attention (Orca, FasterTransformer). What the
// request never fills is reserved but unused: Kwon et al. (SOSP'23, Fig. 2) measured
// only 20.4-38.2 % of such memory holding token states.
#include "workloads/inference/kv/KvManager.hpp"

#include <algorithm>

namespace memwall {
namespace {

class ContiguousKvManager : public KvManager {
public:
  explicit ContiguousKvManager(ParamReader& inference) : KvManager(inference) {}
  std::unique_ptr<KvManager> start(const KvManagerParams& p) const override
  {
    auto k = std::make_unique<ContiguousKvManager>(*this);
    k->open(p);
    return k;
  }
  std::string key_against_token_growth() const override { return "kv_manager"; }
  bool reserves_whole_context() const override { return true; }

  bool reserve(Sequence& s, int64_t tokens) override
  {
    if (tokens <= s.kv_slots)
      return true;
    int64_t need = slots_for(tokens) - s.kv_slots;
    if (need > free_slots())
      return false;
    s.kv_slots += need;
    reserved_ += need;
    return true;
  }

  // Sliding-window layers keep a ring buffer of their window (TensorRT-LLM's cyclic KV).
  int64_t slots_for(int64_t tokens) const override { return held(std::max(p_.max_model_len, tokens)); }

  void release(Sequence& s) override
  {
    reserved_ -= s.kv_slots;
    s.kv_slots = 0;
  }
};

const bool registered = kv_manager_registry().add(
    "contiguous", "reserves max_model_len tokens per request at admission (pre-paging systems)",
    [](ParamReader& inference, const EngineDefaults&) { return std::make_unique<ContiguousKvManager>(inference); });

} // namespace
} // namespace memwall

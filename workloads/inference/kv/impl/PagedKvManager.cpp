// `paged` (Kwon et al., SOSP'23): KV in blocks of block_size tokens, taken one at a time
// as a sequence grows, so at most block_size - 1 slots per sequence are unused. The full
// blocks of a system prompt that every request starts with (`shared_prefix`) are held
// once (by each attention data-parallel group), reference-counted, and their KV is not
// computed again while they are resident.
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/model/InputLimits.hpp"

#include <algorithm>

namespace memwall {
namespace {

class PagedKvManager : public KvManager {
public:
  PagedKvManager(ParamReader& r, const EngineDefaults& d) : KvManager(r)
  {
    block_size_ = r.integer("block_size", d.block_size, "paged KV: tokens per block", 0,
                            "the engine's (`memwall list engines`)", limits::tokens);
    if (block_size_ < 1)
      r.fail("block_size", "must be at least 1 token");
    shared_prefix_ = r.integer("shared_prefix", 0, "tokens of a system prompt every prompt starts with (shared KV)", 0,
                               "", limits::tokens);
  }

  std::unique_ptr<KvManager> start(const KvManagerParams& p) const override
  {
    auto k = std::make_unique<PagedKvManager>(*this);
    k->open(p);
    k->p_.capacity_tokens = p.capacity_tokens / block_size_ * block_size_; // the budget is whole blocks
    k->prefix_blocks_     = shared_prefix_ / block_size_;
    k->prefix_users_      = 0;
    return k;
  }

  int64_t shared_prefix() const override { return shared_prefix_; }
  std::string key_against_token_growth() const override
  {
    return block_size_ != 1 ? "block_size" : shared_prefix_ > 0 ? "shared_prefix" : "";
  }
  std::string summary() const override
  {
    return "paged KV (block " + std::to_string(block_size_) + ", preempt by " + (swaps_ ? "swap" : "recompute") + ")" +
           (shared_prefix_ > 0 ? ", shared prefix " + std::to_string(shared_prefix_) : "");
  }

  bool reserve(Sequence& s, int64_t tokens) override
  {
    int64_t shared = 0, new_prefix = 0;
    bool joins = !s.shares_prefix && prefix_blocks_ > 0 && s.kv_slots == 0;
    if (joins || s.shares_prefix) {
      shared = prefix_blocks_ * block_size_;
      if (joins && prefix_users_ == 0)
        new_prefix = prefix_slots();
    }
    int64_t own  = held(std::max<int64_t>(tokens - shared, 0), block_size_);
    int64_t need = own - s.kv_slots + new_prefix;
    if (need <= 0)
      return true;
    if (need > free_slots())
      return false;
    reserved_ += need;
    s.kv_slots = std::max(own, s.kv_slots);
    if (joins) {
      s.shares_prefix = true;
      ++prefix_users_;
    }
    return true;
  }

  void release(Sequence& s) override
  {
    reserved_ -= s.kv_slots;
    s.kv_slots = 0;
    if (s.shares_prefix) {
      s.shares_prefix = false;
      if (--prefix_users_ == 0)
        reserved_ -= prefix_slots();
    }
  }

  int64_t slots_for(int64_t tokens) const override { return held(tokens, block_size_); }

  int64_t cached_prefix(const Sequence&) const override { return prefix_users_ > 0 ? prefix_blocks_ * block_size_ : 0; }

  int64_t stored_tokens(const ServingState& st) const override
  {
    int64_t n      = KvManager::stored_tokens(st);
    int64_t shared = prefix_blocks_ * block_size_;
    for (int s : st.running)
      if (st.seqs[s].shares_prefix)
        n -= std::min(shared, st.seqs[s].computed);
    return n + (prefix_users_ > 0 ? prefix_slots() : 0);
  }

private:
  // The shared prefix's slots: its full blocks, held by every group.
  int64_t prefix_slots() const { return prefix_blocks_ * block_size_ * p_.groups; }

  // The configuration (the spec's keys).
  int64_t block_size_    = 16;
  int64_t shared_prefix_ = 0;
  // A run's state.
  int64_t prefix_blocks_ = 0;
  int64_t prefix_users_  = 0;
};

const bool registered = kv_manager_registry().add(
    "paged", "blocks of block_size tokens taken as sequences grow (vLLM); shared prefix blocks held once",
    [](ParamReader& inference, const EngineDefaults& d) { return std::make_unique<PagedKvManager>(inference, d); });

} // namespace
} // namespace memwall

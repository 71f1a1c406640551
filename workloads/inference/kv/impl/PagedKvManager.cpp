// `paged` (Kwon et al., SOSP'23): KV in blocks of block_size tokens, taken one at a time
// as a sequence grows, so at most block_size - 1 slots per sequence are unused. The full
// blocks of a system prompt that every request starts with (`shared_prefix`) are held
// once (by each attention data-parallel group), reference-counted, and their KV is not
// computed again while they are resident.
#include "workloads/inference/kv/KvManager.hpp"

#include <algorithm>

namespace memwall {
namespace {

class PagedKvManager : public KvManager {
public:
  explicit PagedKvManager(const KvManagerParams& p) : KvManager(p), prefix_blocks_(p.shared_prefix / p.block_size)
  {
    // The budget is whole blocks.
    p_.capacity_tokens = p.capacity_tokens / p.block_size * p.block_size;
  }

  bool reserve(Sequence& s, int64_t tokens) override
  {
    int64_t shared = 0, new_prefix = 0;
    bool joins = !s.shares_prefix && prefix_blocks_ > 0 && s.kv_slots == 0;
    if (joins || s.shares_prefix) {
      shared = prefix_blocks_ * p_.block_size;
      if (joins && prefix_users_ == 0)
        new_prefix = prefix_slots();
    }
    int64_t own  = held(std::max<int64_t>(tokens - shared, 0), p_.block_size);
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

  int64_t slots_for(int64_t tokens) const override { return held(tokens, p_.block_size); }

  int64_t cached_prefix(const Sequence&) const override
  {
    return prefix_users_ > 0 ? prefix_blocks_ * p_.block_size : 0;
  }

  int64_t stored_tokens(const ServingState& st) const override
  {
    int64_t n      = KvManager::stored_tokens(st);
    int64_t shared = prefix_blocks_ * p_.block_size;
    for (int s : st.running)
      if (st.seqs[s].shares_prefix)
        n -= std::min(shared, st.seqs[s].computed);
    return n + (prefix_users_ > 0 ? prefix_slots() : 0);
  }

private:
  // The shared prefix's slots: its full blocks, held by every group.
  int64_t prefix_slots() const { return prefix_blocks_ * p_.block_size * p_.groups; }

  int64_t prefix_blocks_ = 0;
  int64_t prefix_users_  = 0;
};

const bool registered = kv_manager_registry().add(
    "paged", "blocks of block_size tokens taken as sequences grow (vLLM); shared prefix blocks held once",
    [](const KvManagerParams& p) { return std::make_unique<PagedKvManager>(p); });

} // namespace
} // namespace memwall

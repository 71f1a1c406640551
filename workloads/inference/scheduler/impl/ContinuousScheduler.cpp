// `continuous`: iteration-level batching as vLLM (v0) does it (Yu et al., Orca, OSDI'22;
// Kwon et al., SOSP'23). Each iteration either
//   - admits waiting prompts (first come, first served) while the sequence limit, the
//     token budget and free KV allow, and runs their prefills alone; or
//   - runs one decode token for every running sequence, preempting the newest ones
//     when a sequence needs a KV block and none is free, then swaps sequences back in.
// Swapped sequences go before new prompts. With chunked prefill, decodes come first and
// prefill chunks fill the rest of the token budget in the same iteration.
#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include <algorithm>

namespace memwall {
namespace {

class ContinuousScheduler : public BatchScheduler {
public:
  ContinuousScheduler(ParamReader& inference, const EngineDefaults& d) : BatchScheduler(inference, d) {}
  bool iteration_level() const override { return true; }
  Iteration schedule(ServingState& st, KvManager& kv) const override
  {
    Iteration it;
    int64_t budget = st.limits.max_num_batched_tokens;
    if (!st.limits.chunked_prefill) {
      if (st.swapped.empty())
        admit(st, kv, it, budget, /*chunked=*/false);
      if (!it.work.empty())
        return it;
    }
    for (size_t i = 0; i < st.running.size(); ++i) {
      int s       = st.running[i];
      Sequence& q = st.seqs[s];
      if (q.prefilling())
        continue; // chunked: after the decodes
      if (!grow(st, kv, s, q.computed + 1, it))
        break;
      it.work.push_back({s, 1});
      --budget;
    }
    if (st.limits.chunked_prefill) {
      for (size_t i = 0; i < st.running.size() && budget > 0; ++i) {
        int s       = st.running[i];
        Sequence& q = st.seqs[s];
        if (!q.prefilling())
          continue;
        int64_t chunk = std::min(q.pending(), budget);
        if (!grow(st, kv, s, q.computed + chunk, it))
          break;
        it.work.push_back({s, chunk});
        budget -= chunk;
      }
    }
    if (it.swapped_out.empty() && it.recomputed == 0)
      swap_in(st, kv, it, budget);
    if (st.limits.chunked_prefill && st.swapped.empty())
      admit(st, kv, it, budget, /*chunked=*/true);
    return it;
  }

private:
  // Reserves KV for `tokens` of s, preempting the newest running sequences until it
  // fits; false if s itself had to go.
  bool grow(ServingState& st, KvManager& kv, int s, int64_t tokens, Iteration& it) const
  {
    while (!kv.reserve(st.seqs[s], tokens)) {
      int victim = st.running.back();
      preempt(st, kv, victim, it);
      if (victim == s)
        return false;
    }
    return true;
  }

  void admit(ServingState& st, KvManager& kv, Iteration& it, int64_t& budget, bool chunked) const
  {
    while (!st.waiting.empty() && static_cast<int64_t>(st.running.size()) < st.limits.max_num_seqs && budget > 0) {
      if (reject_if_too_long(st, kv, it))
        continue;
      int s          = st.waiting.front();
      Sequence& q    = st.seqs[s];
      int64_t cached = q.computed == 0 ? std::min(kv.cached_prefix(q), q.tokens() - 1) : 0;
      int64_t start  = std::max(q.computed, cached);
      int64_t tokens = q.tokens() - start;
      if (chunked)
        tokens = std::min(tokens, budget);
      else if (tokens > budget)
        break;
      if (!kv.reserve(q, start + tokens))
        break;
      q.computed = start;
      q.state    = SeqState::running;
      st.waiting.pop_front();
      st.running.push_back(s);
      it.work.push_back({s, tokens});
      budget -= tokens;
    }
  }

  void swap_in(ServingState& st, KvManager& kv, Iteration& it, int64_t& budget) const
  {
    while (!st.swapped.empty() && static_cast<int64_t>(st.running.size()) < st.limits.max_num_seqs && budget > 0) {
      int s       = st.swapped.front();
      Sequence& q = st.seqs[s];
      if (!kv.reserve(q, q.computed + 1))
        break;
      st.swapped.pop_front();
      st.swap_used -= kv.held(q.computed);
      q.state = SeqState::running;
      st.running.push_back(s);
      it.swapped_in.push_back(s);
      it.work.push_back({s, 1});
      --budget;
    }
  }
};

const bool registered = batch_scheduler_registry().add(
    "continuous", "iteration-level batching (vLLM): join and leave every iteration, preempt when KV runs out",
    [](ParamReader& inference, const EngineDefaults& d) {
      return std::make_unique<ContinuousScheduler>(inference, d);
    });

} // namespace
} // namespace memwall

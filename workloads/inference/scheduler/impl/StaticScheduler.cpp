// `static`: request-level batching (HuggingFace generate, FasterTransformer). When the
// GPU is idle, the requests that have arrived (up to max_num_seqs) form a batch whose
// KV for prompt + output is reserved at once; the batch prefills together and decodes
// until its longest output is done. Finished sequences stay in the batch as padding
// (their compute still runs) and every request is answered when the batch ends.
#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include <algorithm>

namespace memwall {
namespace {

class StaticScheduler : public BatchScheduler {
public:
  StaticScheduler(ParamReader& inference, const EngineDefaults& d) : BatchScheduler(inference, d) {}
  bool iteration_level() const override { return false; }
  Iteration schedule(ServingState& st, KvManager& kv) const override
  {
    Iteration it;
    if (st.running.empty()) {
      while (!st.waiting.empty() && static_cast<int64_t>(st.running.size()) < st.limits.max_num_seqs) {
        if (reject_if_too_long(st, kv, it))
          continue;
        int s       = st.waiting.front();
        Sequence& q = st.seqs[s];
        if (!kv.reserve(q, q.req.prompt_tokens + q.req.output_tokens))
          break;
        q.state = SeqState::running;
        st.waiting.pop_front();
        st.running.push_back(s);
        it.work.push_back({s, q.pending()});
      }
      return it;
    }
    for (int s : st.running)
      it.work.push_back({s, 1, st.seqs[s].done});
    return it;
  }

  std::vector<int> retire(ServingState& st, KvManager& kv) const override
  {
    for (int s : st.running)
      if (!st.seqs[s].done)
        return {};
    return BatchScheduler::retire(st, kv);
  }

  // A batch prefills all its prompts at once, whatever the token budget.
  int64_t largest_iteration_tokens(const ServingState& st, int64_t seqs, int64_t) const override
  {
    int64_t longest = 0;
    for (const Sequence& s : st.seqs)
      longest = std::max(longest, s.req.prompt_tokens);
    return seqs * longest;
  }
};

const bool registered = batch_scheduler_registry().add(
    "static", "request-level batching: a batch runs until its longest output is done (HF generate)",
    [](ParamReader& inference, const EngineDefaults& d) { return std::make_unique<StaticScheduler>(inference, d); });

} // namespace
} // namespace memwall

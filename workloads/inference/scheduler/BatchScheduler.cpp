#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include <algorithm>

namespace memwall {

std::vector<int> BatchScheduler::retire(ServingState& st, KvManager& kv)
{
  std::vector<int> out;
  for (int s : st.running)
    if (st.seqs[s].done)
      out.push_back(s);
  for (int s : out) {
    kv.release(st.seqs[s]);
    leave(st, s);
    st.seqs[s].state = SeqState::finished;
  }
  return out;
}

void BatchScheduler::leave(ServingState& st, int seq)
{
  st.running.erase(std::find(st.running.begin(), st.running.end(), seq));
}

void BatchScheduler::preempt(ServingState& st, KvManager& kv, int victim, Iteration& it)
{
  Sequence& v = st.seqs[victim];
  ++v.preemptions;
  leave(st, victim);
  bool swap = st.limits.swap && st.swap_used + kv.held(v.computed) <= st.limits.swap_tokens;
  kv.release(v);
  if (swap) {
    v.state = SeqState::swapped;
    st.swap_used += kv.held(v.computed);
    st.swapped.push_back(victim);
    it.swapped_out.push_back(victim);
    return;
  }
  v.state    = SeqState::waiting;
  v.computed = 0;
  st.waiting.push_front(victim);
  ++it.recomputed;
}

bool BatchScheduler::reject_if_too_long(ServingState& st, const KvManager& kv, Iteration& it)
{
  Sequence& q = st.seqs[st.waiting.front()];
  if (q.req.reject == RejectReason::none) {
    if (kv.slots_for(q.req.prompt_tokens + q.req.output_tokens) <= kv.sequence_capacity())
      return false;
    q.req.reject = RejectReason::kv_cache;
  }
  q.rejected = true;
  q.state    = SeqState::finished;
  it.rejected.push_back(st.waiting.front());
  st.waiting.pop_front();
  return true;
}

Registry<BatchSchedulerFactory>& batch_scheduler_registry()
{
  static Registry<BatchSchedulerFactory> registry("scheduler", "inference.scheduler", "schedulers");
  return registry;
}

} // namespace memwall

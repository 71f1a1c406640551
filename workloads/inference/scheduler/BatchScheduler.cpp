#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include "workloads/model/InputLimits.hpp"

#include <algorithm>

namespace memwall {

BatchScheduler::BatchScheduler(ParamReader& r, const EngineDefaults& d)
{
  const std::string engines = "the engine's (`memwall list engines`)";
  limits_.max_num_seqs      = r.integer("max_num_seqs", d.batch.max_num_seqs,
                                        "most sequences in one iteration (of each attention data-parallel group)", 1,
                                        engines, limits::requests);
  limits_.chunked_prefill = r.flag_or_unset("chunked_prefill", engines, "split prefills into chunks mixed with decodes")
                                .value_or(d.batch.chunked_prefill);
  limits_.max_num_batched_tokens =
      r.integer("max_num_batched_tokens", d.batch.max_num_batched_tokens,
                "most tokens in one iteration (of each attention data-parallel group)", 1, engines, limits::tokens);
  // Without chunks a whole prompt must fit one iteration (vLLM's SchedulerConfig).
  if (!limits_.chunked_prefill && !r.has("max_num_batched_tokens"))
    limits_.max_num_batched_tokens = std::max(limits_.max_num_batched_tokens, d.max_model_len);
  if (!r.has("max_num_seqs") || !r.has("chunked_prefill") || !r.has("max_num_batched_tokens"))
    limits_.whose = d.batch.whose;
}

std::vector<int> BatchScheduler::retire(ServingState& st, KvManager& kv) const
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

void BatchScheduler::leave(ServingState& st, int seq) const
{
  st.running.erase(std::find(st.running.begin(), st.running.end(), seq));
}

void BatchScheduler::preempt(ServingState& st, KvManager& kv, int victim, Iteration& it) const
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

bool BatchScheduler::reject_if_too_long(ServingState& st, const KvManager& kv, Iteration& it) const
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
  // No default name: the engine picks one (InferenceEngine::default_scheduler).
  static Registry<BatchSchedulerFactory> registry("scheduler", "inference.scheduler", "schedulers", "", "inference");
  return registry;
}

} // namespace memwall

#pragma once
// Decides, before each iteration, which sequences run and how many tokens each brings,
// admitting, preempting and swapping them against the KV manager. One interface,
// implementations in impl/ registered by name and chosen by `inference.scheduler`:
//   static      a batch is admitted whole and runs until its longest output is done;
//   continuous  iteration-level scheduling as in vLLM (Orca's idea): sequences join and
//               leave every iteration, preempted when KV runs out, optional chunked prefill.
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/requests/ServingState.hpp"

#include <functional>
#include <memory>
#include <string>

namespace memwall {

class BatchScheduler {
public:
  virtual ~BatchScheduler() = default;
  // The next iteration's work at time `now` (arrivals already admitted to waiting).
  virtual Iteration schedule(ServingState& st, KvManager& kv) = 0;
  // After an iteration: sequences that leave now (their KV released); returns them.
  virtual std::vector<int> retire(ServingState& st, KvManager& kv);
  // The most tokens one iteration of `seqs` sequences brings, whose activations the
  // engine sets aside before the KV budget: the iteration's token budget by default.
  virtual int64_t largest_iteration_tokens(const ServingState&, int64_t /*seqs*/, int64_t token_budget) const
  {
    return token_budget;
  }

protected:
  // Frees victim's KV: swaps it to host memory when swapping is on and space is left,
  // else drops it to be recomputed (back to the front of the waiting queue).
  void preempt(ServingState& st, KvManager& kv, int victim, Iteration& it);
  void leave(ServingState& st, int seq);
  // Drops the head of the waiting queue if its whole length could not fit even an
  // empty cache (it would be preempted forever).
  bool reject_if_too_long(ServingState& st, const KvManager& kv, Iteration& it);
};

using BatchSchedulerFactory = std::function<std::unique_ptr<BatchScheduler>()>;
Registry<BatchSchedulerFactory>& batch_scheduler_registry();

} // namespace memwall

#pragma once
// Decides, before each iteration, which sequences run and how many tokens each brings,
// admitting, preempting and swapping them against the KV manager. One interface,
// implementations in impl/ registered by name and chosen by `inference.scheduler`:
//   static      a batch is admitted whole and runs until its longest output is done;
//   continuous  iteration-level scheduling as in vLLM (Orca's idea): sequences join and
//               leave every iteration, preempted when KV runs out, optional chunked prefill.
#include "base/Registry.hpp"
#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/requests/ServingState.hpp"

#include <functional>
#include <memory>
#include <string>

namespace memwall {

// The limits of one iteration (of each attention data-parallel group), the scheduler's
// keys, and whose defaults set those a spec left out (for the summary).
struct BatchLimits {
  int64_t max_num_seqs           = 256;
  int64_t max_num_batched_tokens = 2048;
  bool chunked_prefill           = false;
  std::string whose; // "" when the spec gave all three
};

class BatchScheduler : public Implementation {
public:
  // The next iteration's work at time `now` (arrivals already admitted to waiting).
  virtual Iteration schedule(ServingState& st, KvManager& kv) const = 0;
  // After an iteration: sequences that leave now (their KV released); returns them.
  virtual std::vector<int> retire(ServingState& st, KvManager& kv) const;
  // Sequences join and leave the batch every iteration (vLLM's; false: a batch runs to
  // its longest output, as generate() does).
  virtual bool iteration_level() const = 0;
  const BatchLimits& limits() const { return limits_; }
  // The most tokens one iteration of `seqs` sequences brings, whose activations the
  // engine sets aside before the KV budget: the iteration's token budget by default.
  virtual int64_t largest_iteration_tokens(const ServingState&, int64_t /*seqs*/, int64_t token_budget) const
  {
    return token_budget;
  }

protected:
  // Reads the keys every scheduler has (SST's parameters of a base spliced into each
  // derived one): sequences and tokens per iteration and chunked prefill, defaulting to
  // what the engine's release sets.
  BatchScheduler(ParamReader& inference, const EngineDefaults& d);

  // Frees victim's KV: swaps it to host memory when swapping is on and space is left,
  // else drops it to be recomputed (back to the front of the waiting queue).
  void preempt(ServingState& st, KvManager& kv, int victim, Iteration& it) const;
  void leave(ServingState& st, int seq) const;
  // Drops the head of the waiting queue if its whole length could not fit even an
  // empty cache (it would be preempted forever).
  bool reject_if_too_long(ServingState& st, const KvManager& kv, Iteration& it) const;

private:
  BatchLimits limits_;
};

// Reads the scheduler's keys from the `inference` section, defaulting to the engine's.
using BatchSchedulerFactory =
    std::function<std::unique_ptr<BatchScheduler>(ParamReader& inference, const EngineDefaults&)>;
Registry<BatchSchedulerFactory>& batch_scheduler_registry();

} // namespace memwall

#pragma once
// memwall advise: when a configuration does not fit, simulate the standard remedies in
// the practitioners' order of cost (each alone on the given spec), then two at a time,
// and rank what fits by speed: the first remedy that fits is rarely the fastest (a
// smaller micro-batch fits before offload does, and runs slower than offload with the
// micro-batch kept). When nothing fits alone or in pairs, the cheapest ones are stacked
// until the stack fits. Every candidate is a full
// replay in its own process; nothing here is a formula.
#include "app/advise/Remedy.hpp"
#include "sim/result/RunResult.hpp"

#include <functional>
#include <string>
#include <vector>

namespace memwall {

// What the advisor needs of one replay (filled by analysis, which owns the figures).
struct TryMeasure {
  // No device out of memory; serving: also no request rejected, no preemption, keeping up
  // with the arrivals and meeting the latency targets given (what the advisor remedies).
  bool fits = false;
  bool oom  = false;            // some device ran out of memory
  std::string device, hardware; // the fullest device, by peak / capacity
  double peak_bytes = 0, capacity_bytes = 0;
  double step_time_s  = 0;     // training: one optimizer step; serving: the whole run
  double tokens_per_s = 0;     // training: tokens/s; serving: output tokens/s
  double tpot_s       = 0;     // serving: time per output token, p50
  double rejected     = 0;     // serving: requests longer than the KV cache
  double preemptions  = 0;     // serving: sequences preempted (KV recomputed or swapped)
  bool saturated      = false; // serving: the queue grows (ServingReport's load)
  std::string missed;          // serving: the first latency target missed ("TTFT p90"), or ""
  double gpus = 0, hardware_cost_usd = 0;
};
using TryMeasurer = std::function<TryMeasure(const ExperimentSpec&, const RunResult&)>;

struct TryOutcome {
  RemedyTry change;
  bool ran = false; // false: the change is invalid for this spec (error says why)
  std::string error;
  TryMeasure m;
};

struct RemedyOutcome {
  std::string name, description;
  std::vector<TryOutcome> tries;
  bool changes_what_trains = false; // Remedy::changes_what_trains: listed, not an answer
  // The try to report: the first that fits, else the one that came closest.
  const TryOutcome* answer() const;
};

struct Advice {
  bool serving = false;
  std::vector<std::string> user_overrides; // the --set strings the spec was given with
  TryOutcome given;
  std::vector<RemedyOutcome> remedies; // cheapest first; empty when the given spec fits
  // Two remedies at once on the same GPUs (a try of one with a try of a costlier one):
  // recomputation with offload, a smaller micro-batch with ZeRO and offload.
  std::vector<TryOutcome> combined;
  std::vector<TryOutcome> stacked; // the cheapest remedies applied together, one more each row

  // Every try that fits on the given GPU count, fastest first (training: step time;
  // serving: output tokens/s); those within 1 % of the fastest count as equals, cheapest
  // (alone before two at a time, in cost order) first.
  std::vector<const TryOutcome*> fitting_fastest_first() const;
};

// `spec` is load_spec(spec_path, overrides), the user's --set strings; every try is
// loaded again in its own process with its changes added. `jobs` replays run at once.
Advice advise(const ExperimentSpec& spec, const std::string& spec_path, const std::vector<std::string>& overrides,
              int jobs, const TryMeasurer& measure);

} // namespace memwall

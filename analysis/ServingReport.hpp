#pragma once
// The figures of a serving run, from its per-request records and KV samples: time to
// first token, time per output token and end-to-end latency (mean, p50, p90, p99),
// throughput, KV-cache utilization (used / reserved, time-weighted), preemptions.
#include "sim/result/RunResult.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace memwall {

// Linear interpolation between closest ranks (numpy's default); q in [0, 1].
double percentile(std::vector<double> values, double q);

// Time-weighted mean of used / reserved KV bytes over the run (1 when nothing is reserved).
double kv_utilization(const ServingStats& s);

// Adds the serving keys (ttft_s, tpot_s, latency_s, output_tokens_per_s, kv_utilization,
// preemptions, max_running_seqs, kv_capacity_tokens, ...) to a --json object.
void add_serving_json(nlohmann::ordered_json& j, const RunResult& r);
// The summary lines, from the object add_serving_json() filled.
std::string serving_text(const nlohmann::ordered_json& j);

} // namespace memwall

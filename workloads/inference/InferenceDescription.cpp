// The one-line descriptions of an inference section that a run's summary prints
// (InferenceSection.hpp): the request lengths as drawn, and the serving setup.
#include "workloads/inference/InferenceSection.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace memwall {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

namespace {

// " (experts spread, ep 8)" or " x 8 attention data-parallel groups, experts spread over ep 16 by all-to-all"
std::string expert_layout(const InferenceConfig& c)
{
  if (c.ep <= 1)
    return "";
  if (c.attention_dp() == 1)
    return " (experts spread, ep " + str(c.ep) + ")";
  return " x " + str(c.attention_dp()) + " attention data-parallel groups, experts spread over ep " + str(c.ep) +
         " by all-to-all";
}

} // namespace

std::string describe_request_lengths(const InferenceConfig& c)
{
  auto one = [&](const char* what, int64_t Request::*field, const LengthDistribution& asked) {
    if (c.requests.empty())
      return std::string(what) + " none";
    int64_t lo = c.requests.front().*field, hi = lo;
    double sum = 0;
    for (const Request& q : c.requests) {
      lo = std::min(lo, q.*field);
      hi = std::max(hi, q.*field);
      sum += static_cast<double>(q.*field);
    }
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.1f", sum / static_cast<double>(c.requests.size()));
    std::string s = std::string(what) + " " + (lo == hi ? str(lo) : str(lo) + "-" + str(hi) + ", mean " + mean);
    // An exponential clipped to [min, max] has another mean than the one asked for.
    if (c.source == "poisson" && asked.dist == "exponential") {
      char m[32];
      std::snprintf(m, sizeof m, "%g", asked.mean);
      s += std::string(" (asked: exponential of mean ") + m + ", clipped to " + str(asked.min) + "-" + str(asked.max) +
           ")";
    }
    return s;
  };
  int64_t refused = 0;
  for (const Request& q : c.requests)
    refused += q.reject != RejectReason::none ? 1 : 0;
  std::string s = one("prompt", &Request::prompt_tokens, c.prompt_dist) + " tokens; " +
                  one("output", &Request::output_tokens, c.output_dist);
  if (refused > 0)
    s += "; " + str(refused) + " over max_model_len " + str(c.max_model_len) + ", refused on arrival";
  return s;
}

std::string describe_inference(const InferenceConfig& c)
{
  // A token budget limits an iteration-level scheduler's iterations; a static batch
  // prefills whole prompts whatever it says.
  const BatchLimits& b = c.scheduler->limits();
  std::string s =
      c.engine->summary_prefix() + dtype_name(c.weight_dtype) + " weights, " + dtype_name(c.kv_dtype) + " KV, tp " +
      str(c.tp) + expert_layout(c) + ", " + c.scheduler->name() + " batching (max " + str(b.max_num_seqs) + " seqs" +
      (c.attention_dp() > 1 ? " per group" : "") +
      (c.scheduler->iteration_level() ? ", " + str(b.max_num_batched_tokens) + " tokens per iteration" : "") +
      (b.chunked_prefill ? ", chunked prefill" : "") + (b.whose.empty() ? "" : "; " + b.whose) + "), " +
      c.kv_manager->summary();
  if (c.gpu_batches > 1)
    s += ", " + str(c.gpu_batches) + " GPU batches per layer";
  auto off = [&](const OffShares& o, const std::string& what) {
    std::string t;
    if (o.cpu > 0)
      t += str(std::llround(o.cpu * 100)) + " % of " + what + " on cpu";
    if (o.nvme > 0)
      t += (t.empty() ? "" : ", ") + str(std::llround(o.nvme * 100)) + " % of " + what + " on nvme";
    return t.empty() ? t : ", " + t;
  };
  s += off(c.weights_off, "weights");
  s += off(c.kv_off, "KV");
  if (c.kv_off.any() && c.cpu_attention)
    s += " (attention there on the CPU)";
  s += off(c.act_off, "activations");
  return s;
}

} // namespace memwall

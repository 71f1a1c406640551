#include "analysis/ServingReport.hpp"

#include "base/NumberFormat.hpp"
#include "base/ParamReader.hpp"
#include "base/Quantity.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

namespace memwall {
namespace {

struct Latencies {
  std::vector<double> ttft, tpot, latency, max_itl, delay;
  double prompt_tokens = 0, output_tokens = 0;
  int64_t completed = 0, rejected = 0;
  std::array<int64_t, 4> by_reason{}; // by RejectReason
};

// The lengths of every request offered, served or not: what a length distribution
// came out as after clipping, and the longest.
nlohmann::ordered_json lengths(const ServingStats& s, int64_t RequestRecord::*field)
{
  if (s.requests.empty())
    return {{"mean", nullptr}, {"min", nullptr}, {"max", nullptr}};
  double sum = 0;
  int64_t lo = s.requests.front().*field, hi = lo;
  for (const RequestRecord& q : s.requests) {
    sum += static_cast<double>(q.*field);
    lo = std::min(lo, q.*field);
    hi = std::max(hi, q.*field);
  }
  return {{"mean", sum / static_cast<double>(s.requests.size())}, {"min", lo}, {"max", hi}};
}

Latencies latencies(const ServingStats& s)
{
  Latencies l;
  for (const RequestRecord& q : s.requests) {
    if (q.rejected || q.finish_s < 0) {
      l.rejected += q.rejected ? 1 : 0;
      if (q.rejected)
        ++l.by_reason[std::min<size_t>(q.reject_reason, 3)];
      continue;
    }
    ++l.completed;
    if (q.scheduled_s >= 0)
      l.delay.push_back(q.scheduled_s - q.arrival_s);
    l.prompt_tokens += static_cast<double>(q.prompt_tokens);
    l.output_tokens += static_cast<double>(q.output_tokens);
    l.ttft.push_back(q.first_token_s - q.arrival_s);
    l.latency.push_back(q.finish_s - q.arrival_s);
    if (q.output_tokens > 1) {
      l.tpot.push_back((q.finish_s - q.first_token_s) / static_cast<double>(q.output_tokens - 1));
      l.max_itl.push_back(q.max_itl_s);
    }
  }
  return l;
}

// No request completed: no latency at all (null), not a latency of zero.
nlohmann::ordered_json summary(const std::vector<double>& v)
{
  if (v.empty())
    return {{"mean", nullptr}, {"p50", nullptr}, {"p90", nullptr}, {"p99", nullptr}};
  double mean = 0;
  for (double x : v)
    mean += x;
  mean = v.empty() ? 0.0 : mean / static_cast<double>(v.size());
  return {{"mean", mean}, {"p50", percentile(v, 0.5)}, {"p90", percentile(v, 0.9)}, {"p99", percentile(v, 0.99)}};
}

// Offered load against what the server kept up with. Offered: the arrival rate over the
// arrival window. A server short of it by a factor k builds a backlog that every later
// request waits through: the wait to be scheduled grows by k - 1 seconds per second of
// arrivals (M/D/1 at load 1.5: 0.5). The least-squares slope of wait against arrival
// gives k, hence what was served, offered / k; saturated when k > 1.1 (more than 10 %
// short), judged with at least 50 scheduled requests.
nlohmann::ordered_json load(const ServingStats& s)
{
  nlohmann::ordered_json j = {{"offered_requests_per_s", nullptr},
                              {"wait_growth", nullptr},
                              {"served_requests_per_s", nullptr},
                              {"saturated", nullptr}};
  if (s.requests.size() < 2)
    return j;
  double first = s.requests.front().arrival_s, last = first;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const RequestRecord& q : s.requests) {
    first = std::min(first, q.arrival_s);
    last  = std::max(last, q.arrival_s);
    if (q.scheduled_s < 0)
      continue;
    double x = q.arrival_s, y = q.scheduled_s - q.arrival_s;
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  if (last <= first)
    return j;
  double offered              = static_cast<double>(s.requests.size() - 1) / (last - first);
  j["offered_requests_per_s"] = offered;
  double spread               = n * sxx - sx * sx;
  if (n < 2 || spread <= 0)
    return j;
  double growth              = (n * sxy - sx * sy) / spread;
  j["wait_growth"]           = growth;
  j["served_requests_per_s"] = offered / (1 + std::max(0.0, growth));
  if (n >= 50)
    j["saturated"] = growth > 0.1;
  return j;
}

} // namespace

double percentile(std::vector<double> v, double q)
{
  if (v.empty())
    return 0.0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo  = static_cast<size_t>(std::floor(pos));
  size_t hi  = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double kv_utilization(const ServingStats& s)
{
  double weighted = 0, total = 0;
  for (size_t i = 1; i < s.kv.size(); ++i) {
    double dt = s.kv[i].time - s.kv[i - 1].time;
    if (s.kv[i].reserved_bytes <= 0 || dt <= 0)
      continue;
    weighted += dt * s.kv[i].used_bytes / s.kv[i].reserved_bytes;
    total += dt;
  }
  return total > 0 ? weighted / total : 1.0;
}

void add_serving_json(nlohmann::ordered_json& j, const RunResult& r)
{
  const ServingStats& s            = r.serving;
  Latencies l                      = latencies(s);
  double span                      = r.makespan_s;
  j["requests_completed"]          = l.completed;
  j["requests_rejected"]           = l.rejected;
  j["requests_rejected_by_reason"] = {
      {"kv_cache", l.by_reason[1]}, {"prompt_too_long", l.by_reason[2]}, {"exceeds_context", l.by_reason[3]}};
  j["request_lengths"] = {{"prompt_tokens", lengths(s, &RequestRecord::prompt_tokens)},
                          {"output_tokens", lengths(s, &RequestRecord::output_tokens)}};
  // A server that did not fit has no throughput and no latencies, not zeros.
  const bool ok = j["fits"].get<bool>();
  auto rate     = [&](double v) {
    return ok ? nlohmann::ordered_json(span > 0 ? v / span : 0.0) : nlohmann::ordered_json(nullptr);
  };
  auto stats               = [&](const std::vector<double>& v) { return summary(ok ? v : std::vector<double>{}); };
  j["output_tokens_per_s"] = rate(l.output_tokens);
  j["total_tokens_per_s"]  = rate(l.output_tokens + l.prompt_tokens);
  j["requests_per_s"]      = rate(static_cast<double>(l.completed));
  j["ttft_s"]              = stats(l.ttft);
  j["tpot_s"]              = stats(l.tpot);
  j["latency_s"]           = stats(l.latency);
  j["max_itl_s"]           = stats(l.max_itl); // per request: its longest pause between two tokens
  j["scheduling_delay_s"]  = stats(l.delay);   // arrival to first iteration: the wait in the queue
  // The time-average of the queue is the sum of the waits over the run (Little's law).
  double waited = 0;
  for (double d : l.delay)
    waited += d;
  int64_t max_waiting = 0;
  for (const KvSample& k : s.kv)
    max_waiting = std::max(max_waiting, k.waiting);
  j["queue"]          = {{"mean_waiting", span > 0 ? waited / span : 0.0}, {"max_waiting", max_waiting}};
  j["load"]           = load(s);
  j["kv_utilization"] = kv_utilization(s);
  double peak_used = 0, peak_reserved = 0;
  for (const KvSample& k : s.kv) {
    peak_used     = std::max(peak_used, k.used_bytes);
    peak_reserved = std::max(peak_reserved, k.reserved_bytes);
  }
  // What share of the budget held tokens: at the peak, and on average over the run.
  double used_time = 0, total_time = 0;
  for (size_t i = 1; i < s.kv.size(); ++i) {
    double dt = s.kv[i].time - s.kv[i - 1].time;
    used_time += dt > 0 ? dt * s.kv[i].used_bytes : 0.0;
    total_time += dt > 0 ? dt : 0.0;
  }
  bool budget   = s.kv_budget_bytes > 0;
  j["kv_cache"] = {
      {"bytes_per_token", s.kv_bytes_per_token},
      {"budget_bytes", s.kv_budget_bytes},
      {"holds_one_request", !s.kv_no_room},
      {"shortfall_bytes", s.kv_shortfall_bytes},
      {"accounting", s.kv_accounting},
      {"startup_refusal", s.kv_refusal.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s.kv_refusal)},
      {"offloaded_fraction", s.kv_offloaded_fraction},
      {"offload_place", s.kv_offload_place},
      {"peak_used_bytes", peak_used},
      {"peak_reserved_bytes", peak_reserved},
      {"peak_used_share", budget ? nlohmann::ordered_json(peak_used / s.kv_budget_bytes) : nullptr},
      {"mean_used_share",
       budget && total_time > 0 ? nlohmann::ordered_json(used_time / total_time / s.kv_budget_bytes) : nullptr}};
  j["kv_capacity_tokens"] = s.kv_capacity_tokens;
  j["preemptions"]        = s.preemptions;
  j["swaps"]              = s.swaps;
  j["max_running_seqs"]   = s.max_running_seqs;
  j["iterations"]         = s.iterations;
}

std::string serving_text(const nlohmann::ordered_json& j)
{
  char line[512];
  std::string os;
  auto t         = [](const nlohmann::ordered_json& x, const char* k) { return format_duration(x[k].get<double>()); };
  const auto& kv = j["kv_cache"];
  // Why requests were rejected, only when some were: no KV room on the GPU at all (and
  // the KV not all offloaded), or requests longer than the KV cache holds.
  int64_t rejected = j["requests_rejected"].get<int64_t>();
  // (Results files written before the shortfall was kept: no budget, some KV on the GPU.)
  bool no_room = kv.contains("holds_one_request")
                     ? !kv["holds_one_request"].get<bool>()
                     : kv["budget_bytes"].get<double>() <= 0 && kv.value("offloaded_fraction", 0.0) < 1;
  std::string why;
  if (rejected > 0) {
    const auto& by = j["requests_rejected_by_reason"];
    std::vector<std::string> parts;
    auto part = [&](const char* key, const char* what) {
      if (int64_t n = by.value(key, int64_t{0}); n > 0)
        parts.push_back(std::to_string(n) + " " + what);
    };
    part("kv_cache", no_room ? "with no room for any KV cache" : "longer than the KV cache");
    part("prompt_too_long", "with the prompt over max_model_len");
    part("exceeds_context", "with prompt + output over max_model_len");
    why = " (" + join(parts, ", ") + ")";
  }
  std::snprintf(line, sizeof line, "  requests       %s completed, %s rejected%s, %s iterations\n",
                format_count(j["requests_completed"].get<double>()).c_str(),
                format_count(static_cast<double>(rejected)).c_str(), why.c_str(),
                format_count(j["iterations"].get<double>()).c_str());
  os += line;
  if (j["output_tokens_per_s"].is_null())
    std::snprintf(line, sizeof line, "  throughput     none: the server did not fit\n");
  else
    std::snprintf(line, sizeof line, "  throughput     %s generated, %s in + out, %.3f requests/s\n",
                  format_si(j["output_tokens_per_s"].get<double>(), "tokens/s").c_str(),
                  format_si(j["total_tokens_per_s"].get<double>(), "tokens/s").c_str(),
                  j["requests_per_s"].get<double>());
  os += line;
  const std::pair<const char*, const char*> rows[] = {{"ttft_s", "time to first "},
                                                      {"tpot_s", "per output tok"},
                                                      {"max_itl_s", "longest pause "},
                                                      {"latency_s", "latency e2e   "}};
  for (const auto& [k, label] : rows) {
    const auto& x = j[k];
    if (x["p50"].is_null()) {
      std::snprintf(line, sizeof line, "  %s none: %s\n", label,
                    j["fits"].get<bool>() ? "no request completed" : "the server did not fit");
      os += line;
      continue;
    }
    std::snprintf(line, sizeof line, "  %s mean %10s, p50 %10s, p90 %10s, p99 %10s\n", label, t(x, "mean").c_str(),
                  t(x, "p50").c_str(), t(x, "p90").c_str(), t(x, "p99").c_str());
    os += line;
  }
  // With KV offloaded, the token count is limited by the GPU's share or by the host's
  // room, and the GiB of the budget are the GPU's: say which is which.
  double off        = kv.value("offloaded_fraction", 0.0);
  std::string where = off > 0 ? " on the GPU; " + std::to_string(static_cast<int>(std::lround(100 * off))) +
                                    " % of each token's KV on " +
                                    (kv.value("offload_place", "cpu") == "nvme" ? "NVMe" : "host memory")
                              : "";
  std::snprintf(line, sizeof line,
                "  KV cache       %s per token per GPU, room for %s tokens (budget %s%s); %.1f %% of reserved KV "
                "holds tokens\n",
                format_bytes(kv["bytes_per_token"].get<double>()).c_str(),
                format_count(j["kv_capacity_tokens"].get<double>()).c_str(),
                format_gib(kv["budget_bytes"].get<double>()).c_str(), where.c_str(),
                100 * j["kv_utilization"].get<double>());
  os += line;
  // How the engine's start-up came to that budget (a refusal to start is the run's "did
  // not fit" line).
  if (std::string how = kv.value("accounting", std::string()); !how.empty())
    os += "                 " + how + "\n";
  std::string share =
      kv.value("peak_used_share", nlohmann::ordered_json()).is_number()
          ? " (" + std::to_string(static_cast<int>(std::lround(100 * kv["peak_used_share"].get<double>()))) +
                " % of the budget)"
          : std::string();
  std::snprintf(
      line, sizeof line,
      "                 peak %s used%s, %s reserved%s; %s preemptions (%s swaps), at most %s sequences running\n",
      format_gib(kv["peak_used_bytes"].get<double>()).c_str(), share.c_str(),
      format_gib(kv["peak_reserved_bytes"].get<double>()).c_str(), off > 0 ? " (GPU and offloaded together)" : "",
      format_count(j["preemptions"].get<double>()).c_str(), format_count(j["swaps"].get<double>()).c_str(),
      format_count(j["max_running_seqs"].get<double>()).c_str());
  os += line;
  if (j.contains("queue") && !j["scheduling_delay_s"]["p50"].is_null()) {
    const auto& d = j["scheduling_delay_s"];
    std::snprintf(line, sizeof line, "  queue          %.1f waiting on average, at most %lld; wait p50 %s, p99 %s\n",
                  j["queue"]["mean_waiting"].get<double>(), (long long)j["queue"]["max_waiting"].get<int64_t>(),
                  t(d, "p50").c_str(), t(d, "p99").c_str());
    os += line;
  }
  const auto& ld = j.value("load", nlohmann::ordered_json());
  if (ld.is_object() && ld["saturated"].is_boolean()) {
    std::snprintf(line, sizeof line,
                  "  load           offered %.3f requests/s, kept up with %.3f/s (waits grew %.3f s a second)%s\n",
                  ld["offered_requests_per_s"].get<double>(), ld["served_requests_per_s"].get<double>(),
                  ld["wait_growth"].get<double>(),
                  ld["saturated"].get<bool>() ? ": SATURATED, the queue grows; lower the rate or add replicas" : "");
    os += line;
  }
  return os;
}

} // namespace memwall

#pragma once
// Serving capacity: the highest Poisson arrival rate a server sustains while meeting
// latency targets (TTFT, TPOT at a percentile) and keeping up with the load, found by
// simulating rates the way Vidur's capacity search does: bracket the boundary by
// doubling or halving from a start, then bisect until the bracket is narrow.
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace memwall {

// "ttft_s" at "p90" at most `seconds`: one of the serving summary's latencies.
struct LatencyTarget {
  std::string metric; // ttft_s | tpot_s
  std::string stat;   // mean | p50 | p90 | p99
  double seconds = 0;
};
// `text` as given on the command line ("p90=2s", "mean=150ms"); InputError naming
// `option` and what is allowed when it is not one.
LatencyTarget parse_latency_target(const std::string& option, const std::string& metric, const std::string& text);
// The --ttft and --tpot options of a command, in that order.
std::vector<LatencyTarget> parse_latency_targets(const std::vector<std::string>& ttft,
                                                 const std::vector<std::string>& tpot);
// "TTFT p90".
std::string latency_target_name(const LatencyTarget& t);
// The target's statistic in a serving run's --json summary; -1 when none (no request completed).
double latency_target_value(const nlohmann::ordered_json& summary, const LatencyTarget& t);

// One simulated rate: whether it fitted, kept up and the value of each target's
// statistic (negative: none, no request completed). A server keeps up when it serves what
// arrives within 2 % (keep_up_share): a queue whose waits grow 2 % of a second a second
// is one that never settles, though ServingReport calls a server saturated only past 10 %.
constexpr double keep_up_share = 0.98;
// Whether a serving run (its --json summary, of `requests` requests) falls behind its
// arrivals: the report's `saturated`, or, on 50 requests or more (fewer give a slope too
// noisy to judge), served under keep_up_share of what arrived. serve-capacity and advise
// both judge by it.
bool falls_behind(const nlohmann::ordered_json& summary, size_t requests);
struct CapacityPoint {
  double rate    = 0;
  bool fits      = false;
  bool saturated = false;
  std::vector<double> values; // per target
  double served  = 0;         // requests per second it kept up with
  double window  = 0;         // seconds the arrivals spanned
  double latency = 0;         // mean end-to-end latency of the completed requests
  bool meets     = false;     // fits, keeps up, every target met
};

struct CapacityResult {
  std::vector<CapacityPoint> points; // in the order simulated
  double capacity = 0;               // the highest rate that met everything; 0: none did
  double bracket  = 0;               // the lowest rate known to fail above it (0: none found)
};

// The rates the varied key allows: the search never steps outside them.
struct RateRange {
  double lowest = 0, highest = 1e300;
};

// Simulates `measure` at rates from `start` on, within `range`. Stops when the bracket
// [capacity, bracket] is within `tolerance` of its top, or after `max_runs`.
CapacityResult search_capacity(double start, const std::vector<LatencyTarget>& targets,
                               const std::function<CapacityPoint(double)>& measure, RateRange range = {},
                               double tolerance = 0.02, int max_runs = 24);

} // namespace memwall

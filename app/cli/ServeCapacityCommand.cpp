// memwall serve-capacity SPEC.yaml [--ttft STAT=DURATION]... [--tpot STAT=DURATION]...
//                                  [--set KEY=VALUE]... [--json]
// The highest arrival rate the spec's server sustains within the latency targets
// (CapacitySearch.hpp): of its Poisson arrivals, or of its trace replayed faster or
// slower; each rate a full simulation of the spec's requests.
#include "analysis/StepReport.hpp"
#include "app/capacity/CapacitySearch.hpp"
#include "app/cli/Commands.hpp"
#include "base/ChildPool.hpp"
#include "base/InputError.hpp"
#include "base/JsonOutput.hpp"
#include "base/Quantity.hpp"
#include "hwmodels/TimingSources.hpp"
#include "sim/Simulation.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "workloads/model/InputLimits.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>

namespace po = boost::program_options;

namespace memwall {
namespace {

std::string rate_text(double rate)
{
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", rate);
  return b;
}

// `more`: how the spec gets more requests (its Poisson count, or a longer trace).
void print_text(const CapacityResult& r, const std::vector<LatencyTarget>& targets, const std::string& title,
                const std::string& more, const GpuSpec& gpu)
{
  // Two machines' capacities compare on equal footing only where these agree.
  std::cout << title << "\n  GPU timing     " << timing_text(timing_sources(gpu)) << "\n  targets        ";
  for (const LatencyTarget& t : targets)
    std::cout << latency_target_name(t) << " <= " << format_duration(t.seconds) << ", ";
  std::cout << "keeping up with the arrivals (served within 2 % of offered)\n\n  rate [req/s]";
  for (const LatencyTarget& t : targets)
    std::printf("  %12s", latency_target_name(t).c_str());
  std::printf("  %12s  verdict\n", "served [/s]");
  for (const CapacityPoint& p : r.points) {
    std::printf("  %12s", rate_text(p.rate).c_str());
    for (double v : p.values)
      std::printf("  %12s", v < 0 ? "none" : format_duration(v).c_str());
    const char* verdict = p.meets ? "meets" : !p.fits ? "does not fit" : p.saturated ? "saturated" : "misses a target";
    std::printf("  %12.4g  %s\n", p.served, verdict);
  }
  if (r.capacity <= 0)
    std::printf("\n  capacity       none: no rate tried met every target (the lowest: %s requests/s)\n",
                rate_text(r.points.empty() ? 0.0 : r.points.back().rate).c_str());
  else if (r.bracket <= 0)
    std::printf("\n  capacity       at least %s requests/s (every rate tried met the targets)\n",
                rate_text(r.capacity).c_str());
  else
    std::printf("\n  capacity       %s requests/s per replica (the next rate tried, %s, failed)\n",
                rate_text(r.capacity).c_str(), rate_text(r.bracket).c_str());
  // A run whose arrivals end before it settles says little about a steady state: the
  // queue has had no time to build. Ten latencies of arrivals is the rule of thumb here.
  for (const CapacityPoint& p : r.points)
    if (p.rate == r.capacity && p.window < 10 * p.latency)
      std::printf("  note           at that rate the arrivals span %s, under ten mean latencies (%s): the server "
                  "may not have settled; give %s\n",
                  format_duration(p.window).c_str(), format_duration(p.latency).c_str(), more.c_str());
}

nlohmann::ordered_json to_json(const CapacityResult& r, const std::vector<LatencyTarget>& targets, const GpuSpec& gpu)
{
  nlohmann::ordered_json j;
  j["timing"] = nlohmann::ordered_json::object();
  for (const auto& [part, source] : timing_sources(gpu))
    j["timing"][part] = source;
  j["targets"] = nlohmann::ordered_json::array();
  for (const LatencyTarget& t : targets)
    j["targets"].push_back({{"metric", t.metric}, {"stat", t.stat}, {"seconds", t.seconds}});
  j["points"] = nlohmann::ordered_json::array();
  for (const CapacityPoint& p : r.points) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (double v : p.values)
      values.push_back(v < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v));
    j["points"].push_back({{"requests_per_s", p.rate},
                           {"fits", p.fits},
                           {"saturated", p.saturated},
                           {"values_s", values},
                           {"served_requests_per_s", p.served},
                           {"meets", p.meets}});
  }
  j["capacity_requests_per_s"] = r.capacity > 0 ? nlohmann::ordered_json(r.capacity) : nlohmann::ordered_json(nullptr);
  j["failed_above_requests_per_s"] =
      r.bracket > 0 ? nlohmann::ordered_json(r.bracket) : nlohmann::ordered_json(nullptr);
  return j;
}

} // namespace

int serve_capacity_command(const std::vector<std::string>& args)
{
  std::string spec_path;
  std::vector<std::string> overrides, ttft, tpot;
  bool json = false;
  po::options_description opts("memwall serve-capacity SPEC.yaml");
  opts.add_options()("help,h",
                     "this help")("ttft", po::value(&ttft)->composing(),
                                  "time to first token target: STAT=DURATION, STAT mean|p50|p90|p99 (repeatable)")(
      "tpot", po::value(&tpot)->composing(), "time per output token target: STAT=DURATION (repeatable)")(
      "set", po::value(&overrides)->composing(), "override a spec key: --set inference.max_num_seqs=128 (repeatable)")(
      "json", po::bool_switch(&json), "print one JSON object instead of the table")(
      "spec", po::value(&spec_path), "serving spec (YAML) with inference.poisson or inference.trace arrivals");
  po::variables_map vm;
  if (!parse_options(args, opts, "spec", vm))
    return 0;
  if (spec_path.empty())
    throw InputError("serve-capacity: missing SPEC.yaml (e.g. memwall serve-capacity "
                     "examples/llama2-7b-serving-poisson-1xa100.yaml --ttft p90=2s --tpot p90=100ms)");
  std::vector<LatencyTarget> targets = parse_latency_targets(ttft, tpot);
  ExperimentSpec spec                = load_spec(spec_path, overrides); // the given spec must be valid
  const InferenceConfig& inf         = spec.inference;
  if (!spec.serving || (inf.source != "poisson" && inf.source != "trace"))
    throw InputError(spec_path +
                     ": serve-capacity varies the arrival rate of inference.poisson or inference.trace; "
                     "this spec " +
                     (spec.serving ? "serves a fixed batch" : std::string("trains")));
  // A trace keeps its requests and the shape of its arrivals; the search replays it
  // faster or slower (inference.trace_speedup), its rate = requests over its span.
  double native = inf.poisson_rate;
  if (inf.source == "trace") {
    double first = inf.requests.front().arrival_s, last = first;
    for (const Request& q : inf.requests) {
      first = std::min(first, q.arrival_s);
      last  = std::max(last, q.arrival_s);
    }
    if (inf.requests.size() < 2 || !(last > first))
      throw InputError(inf.trace_path + ": serve-capacity replays the trace faster or slower, but its requests all "
                                        "arrive at once");
    native = static_cast<double>(inf.requests.size() - 1) / (last - first);
  }
  // The trace's arrivals as read are already divided by the spec's own trace_speedup: a
  // rate is the speed-up that takes the trace as recorded to it (not the spec's times it).
  // The search keeps to what the varied key takes (limits::min_speedup and the others);
  // the clamp keeps a rate at the range's end from rounding past it.
  double recorded = inf.source == "trace" ? native / inf.trace_speedup : 0;
  RateRange range = inf.source == "trace" ? RateRange{recorded * limits::min_speedup, recorded * limits::max_speedup}
                                          : RateRange{limits::min_rate, limits::max_rate};
  auto speedup    = [&](double rate) { return std::clamp(rate / recorded, limits::min_speedup, limits::max_speedup); };
  auto measure    = [&](double rate) {
    std::vector<std::string> with_rate = overrides;
    with_rate.push_back(inf.source == "trace" ? "inference.trace_speedup=" + rate_text(speedup(rate))
                                                 : "inference.poisson.rate=" + rate_text(rate));
    // SimGrid runs one engine per process: every rate in a child of its own.
    ChildOutcome out = run_in_child([&] {
      ExperimentSpec s = load_spec(spec_path, with_rate);
      return json_text(report_json(simulate(s, false, {false, true, false, false})));
    });
    if (out.kind == ChildOutcome::Kind::input_error)
      throw InputError(out.data);
    if (out.kind != ChildOutcome::Kind::result)
      throw std::runtime_error("serve-capacity at " + rate_text(rate) + " requests/s: " + out.data);
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(out.data);
    CapacityPoint p;
    p.fits           = j["fits"].get<bool>();
    p.saturated      = falls_behind(j, spec.inference.requests.size());
    const auto& kept = j["load"]["served_requests_per_s"];
    const auto& off  = j["load"]["offered_requests_per_s"];
    p.window         = off.is_number() && off.get<double>() > 0
                              ? static_cast<double>(spec.inference.requests.size() - 1) / off.get<double>()
                              : 0.0;
    p.latency        = j["latency_s"]["mean"].is_number() ? j["latency_s"]["mean"].get<double>() : 0.0;
    p.served         = kept.is_number() ? kept.get<double>() : 0.0;
    for (const LatencyTarget& t : targets)
      p.values.push_back(latency_target_value(j, t));
    return p;
  };
  CapacityResult r = search_capacity(native, targets, measure, range);
  if (json)
    std::cout << json_text(to_json(r, targets, spec.cluster.node.gpu), 2) << "\n";
  else
    print_text(r, targets, experiment_title(spec),
               inf.source == "trace" ? "a longer trace" : "inference.poisson.requests more", spec.cluster.node.gpu);
  return 0;
}

} // namespace memwall

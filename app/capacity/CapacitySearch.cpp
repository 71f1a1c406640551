#include "app/capacity/CapacitySearch.hpp"

#include "base/InputError.hpp"
#include "base/Quantity.hpp"

#include <algorithm>

namespace memwall {

LatencyTarget parse_latency_target(const std::string& option, const std::string& metric, const std::string& text)
{
  const std::string allowed = " (allowed: mean, p50, p90, p99 = a duration, e.g. " + option + " p90=2s)";
  size_t eq                 = text.find('=');
  if (eq == std::string::npos)
    throw InputError(option + " " + text + ": expected STAT=DURATION" + allowed);
  LatencyTarget t{metric, text.substr(0, eq), 0};
  for (char& c : t.stat)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t.stat != "mean" && t.stat != "p50" && t.stat != "p90" && t.stat != "p99")
    throw InputError(option + " " + text + ": '" + text.substr(0, eq) + "' is not a statistic" + allowed);
  auto seconds = parse_quantity(text.substr(eq + 1), QuantityKind::seconds);
  if (!seconds || *seconds <= 0)
    throw InputError(option + " " + text + ": '" + text.substr(eq + 1) + "' is not a positive duration" + allowed);
  t.seconds = *seconds;
  return t;
}

std::vector<LatencyTarget> parse_latency_targets(const std::vector<std::string>& ttft,
                                                 const std::vector<std::string>& tpot)
{
  std::vector<LatencyTarget> targets;
  for (const std::string& t : ttft)
    targets.push_back(parse_latency_target("--ttft", "ttft_s", t));
  for (const std::string& t : tpot)
    targets.push_back(parse_latency_target("--tpot", "tpot_s", t));
  return targets;
}

std::string latency_target_name(const LatencyTarget& t)
{
  return std::string(t.metric == "ttft_s" ? "TTFT" : "TPOT") + " " + t.stat;
}

double latency_target_value(const nlohmann::ordered_json& summary, const LatencyTarget& t)
{
  const auto& v = summary[t.metric][t.stat];
  return v.is_number() ? v.get<double>() : -1.0;
}

bool falls_behind(const nlohmann::ordered_json& summary, size_t requests)
{
  const auto& load = summary["load"];
  if (load["saturated"].is_boolean() && load["saturated"].get<bool>())
    return true;
  const auto& offered = load["offered_requests_per_s"];
  const auto& served  = load["served_requests_per_s"];
  return requests >= 50 && offered.is_number() && served.is_number() &&
         served.get<double>() < keep_up_share * offered.get<double>();
}

CapacityResult search_capacity(double start, const std::vector<LatencyTarget>& targets,
                               const std::function<CapacityPoint(double)>& measure, RateRange range, double tolerance,
                               int max_runs)
{
  CapacityResult r;
  auto run = [&](double rate) {
    CapacityPoint p = measure(rate);
    p.rate          = rate;
    p.meets         = p.fits && !p.saturated;
    for (size_t i = 0; i < targets.size() && p.meets; ++i)
      p.meets = p.values.at(i) >= 0 && p.values[i] <= targets[i].seconds;
    r.points.push_back(p);
    if (p.meets)
      r.capacity = std::max(r.capacity, rate);
    else if (r.bracket == 0 || rate < r.bracket)
      r.bracket = rate;
    return p.meets;
  };
  // Bracket: double while the rate meets, halve while it does not (down to start / 2^20),
  // never past the range the varied key allows: its end is tried last.
  double rate = std::clamp(start, range.lowest, range.highest);
  bool meets  = run(rate);
  for (int i = 0; i < 20 && static_cast<int>(r.points.size()) < max_runs; ++i) {
    if (meets && r.bracket > 0)
      break;
    if (!meets && r.capacity > 0)
      break;
    double next = std::clamp(meets ? rate * 2 : rate / 2, range.lowest, range.highest);
    if (next == rate)
      break; // the range's end, tried
    rate  = next;
    meets = run(rate);
  }
  if (r.capacity == 0 || r.bracket == 0)
    return r;
  while (static_cast<int>(r.points.size()) < max_runs && r.bracket - r.capacity > tolerance * r.bracket)
    run((r.capacity + r.bracket) / 2);
  return r;
}

} // namespace memwall

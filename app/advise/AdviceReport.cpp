#include "app/advise/AdviceReport.hpp"

#include "analysis/StepReport.hpp"
#include "app/capacity/CapacitySearch.hpp"
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace memwall {
namespace {

std::string percent_change(double now, double before)
{
  if (!(before > 0))
    return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", 100 * (now / before - 1));
  return buf;
}

// "30.12 / 37.25 GiB fits" or "... OUT OF MEMORY", the speed figure, and the change
// against the given configuration.
std::string figures(const Advice& a, const TryOutcome& t)
{
  if (!t.ran)
    return "invalid: " + t.error;
  const TryMeasure& m = t.m;
  char buf[256];
  std::string state = m.oom               ? "OUT OF MEMORY"
                      : m.rejected > 0    ? "rejects requests"
                      : m.saturated       ? "saturated"
                      : !m.missed.empty() ? "misses " + m.missed
                      : m.preemptions > 0 ? "preempts " + std::to_string(static_cast<long long>(m.preemptions))
                                          : "fits";
  if (a.serving)
    std::snprintf(buf, sizeof buf, "%9s of %9s  %-16s %10s out tok/s %9s", format_gib(m.peak_bytes).c_str(),
                  format_gib(m.capacity_bytes).c_str(), state.c_str(), format_si(m.tokens_per_s, "").c_str(),
                  percent_change(m.tokens_per_s, a.given.m.tokens_per_s).c_str());
  else if (m.oom) // it did not run as a GPU would: no time to show
    std::snprintf(buf, sizeof buf, "%9s of %9s  %-16s", format_gib(m.peak_bytes).c_str(),
                  format_gib(m.capacity_bytes).c_str(), state.c_str());
  else
    std::snprintf(buf, sizeof buf, "%9s of %9s  %-16s %9.4f s %9s", format_gib(m.peak_bytes).c_str(),
                  format_gib(m.capacity_bytes).c_str(), state.c_str(), m.step_time_s,
                  percent_change(m.step_time_s, a.given.m.step_time_s).c_str());
  return buf;
}

// An override as a shell word: quoted where a shell would glob or split it ([...], spaces).
std::string shell_word(const std::string& s)
{
  if (s.find_first_of(" []{}*?$'\"") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string run_line(const Advice& a, const std::string& spec_path, const TryOutcome& t)
{
  // A key the remedy sets replaces the user's --set of it: the line says each key once.
  auto key         = [](const std::string& o) { return o.substr(0, o.find('=')); };
  std::string line = "memwall run " + spec_path;
  for (const std::string& o : a.user_overrides) {
    bool replaced = std::any_of(t.change.overrides.begin(), t.change.overrides.end(),
                                [&](const std::string& c) { return key(c) == key(o); });
    if (!replaced)
      line += " --set " + shell_word(o);
  }
  for (const std::string& o : t.change.overrides)
    line += " --set " + shell_word(o);
  return line;
}

nlohmann::ordered_json try_json(const TryOutcome& t)
{
  nlohmann::ordered_json j;
  j["change"]    = t.change.change;
  j["overrides"] = t.change.overrides;
  j["ran"]       = t.ran;
  if (!t.ran) {
    j["error"] = t.error;
    return j;
  }
  j["fits"]              = t.m.fits;
  j["device"]            = t.m.device;
  j["peak_bytes"]        = t.m.peak_bytes;
  j["capacity_bytes"]    = t.m.capacity_bytes;
  j["step_time_s"]       = t.m.oom ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.m.step_time_s);
  j["tokens_per_s"]      = t.m.oom ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.m.tokens_per_s);
  j["gpus"]              = t.m.gpus;
  j["preemptions"]       = t.m.preemptions;
  j["saturated"]         = t.m.saturated;
  j["missed_target"]     = t.m.missed.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.m.missed);
  j["hardware_cost_usd"] = t.m.hardware_cost_usd;
  return j;
}

} // namespace

TryMeasure measure_try(const ExperimentSpec& spec, const RunResult& r, const std::vector<LatencyTarget>& targets)
{
  nlohmann::ordered_json j = report_json(r);
  TryMeasure m;
  if (const auto* d = fullest_device(j["devices"])) {
    m.device         = (*d)["name"].get<std::string>();
    m.hardware       = (*d)["hardware"].get<std::string>();
    m.peak_bytes     = (*d)["peak_bytes"].get<double>();
    m.capacity_bytes = (*d)["capacity_bytes"].get<double>();
  }
  m.fits        = j["fits"].get<bool>();
  m.oom         = !m.fits;
  auto number   = [](const nlohmann::ordered_json& v) { return v.is_null() ? 0.0 : v.get<double>(); }; // no figure
  m.step_time_s = number(j["step_time_s"]);
  if (spec.serving) {
    m.tokens_per_s = number(j["output_tokens_per_s"]);
    m.tpot_s       = number(j["tpot_s"]["p50"]); // null when none completed
    m.rejected     = j["requests_rejected"].get<double>();
    m.preemptions  = j["preemptions"].get<double>();
    m.saturated    = falls_behind(j, spec.inference.requests.size()); // as serve-capacity judges it
    for (const LatencyTarget& t : targets) {
      double v = latency_target_value(j, t);
      if (m.missed.empty() && (v < 0 || v > t.seconds))
        m.missed = latency_target_name(t);
    }
    // A server that drops, preempts, falls behind or misses a target has something to
    // remedy, though it fits.
    m.fits = m.fits && m.rejected == 0 && m.preemptions == 0 && !m.saturated && m.missed.empty();
  } else {
    m.tokens_per_s = number(j["tokens_per_s"]);
  }
  m.gpus              = spec.cluster.total_gpus();
  m.hardware_cost_usd = spec.cluster.price_usd();
  return m;
}

std::string advice_text(const Advice& a, const std::string& spec_path, const std::string& title)
{
  std::ostringstream os;
  const TryMeasure& g = a.given.m;
  os << title << "\n\n";
  std::string given = figures(a, a.given);
  os << "  as given: " << g.device << " (" << g.hardware << ")\n"
     << std::string(29, ' ') << given.substr(0, given.find_last_not_of(" +0.%") + 1) << "\n";
  if (g.fits) {
    os << (a.serving ? "\n  It fits and keeps up without preempting; nothing to remedy.\n"
                     : "\n  It fits; nothing to remedy.\n");
    return os.str();
  }
  os << "\n  remedies, cheapest first, each alone on the given spec (peak of the fullest device, "
     << (a.serving ? "output tokens/s" : "step time") << ", change against as given)\n";
  const TryOutcome* first = nullptr;
  const char* first_name  = "";
  int n                   = 0;
  int width               = 20; // the changes' column: the longest change, at most 72
  for (const RemedyOutcome& r : a.remedies)
    for (const TryOutcome& t : r.tries)
      width = std::max(width, std::min(72, static_cast<int>(t.change.change.size())));
  for (const RemedyOutcome& r : a.remedies) {
    char head[96];
    std::snprintf(head, sizeof head, "  %d. %-20s ", ++n, r.name.c_str());
    if (r.tries.empty()) {
      os << head << "does not apply here\n";
      continue;
    }
    bool first_row = true;
    for (const TryOutcome& t : r.tries) {
      os << (first_row ? std::string(head) : std::string(std::string(head).size(), ' '));
      char change[256];
      std::snprintf(change, sizeof change, "%-*s ", width, t.change.change.c_str());
      os << change << figures(a, t) << "\n";
      first_row = false;
    }
    // The cheapest remedy that fits on the given GPUs (more GPUs are said apart below).
    if (const TryOutcome* t = r.answer(); t && t->m.fits && t->m.gpus == g.gpus && !r.changes_what_trains) {
      if (first)
        continue;
      first      = t;
      first_name = r.name.c_str();
    }
  }
  // Two at a time: those that fit, fastest first (the rest are in --json).
  std::vector<const TryOutcome*> ranked = a.fitting_fastest_first(), pairs;
  for (const TryOutcome* t : ranked)
    if (t >= a.combined.data() && t < a.combined.data() + a.combined.size())
      pairs.push_back(t);
  if (!a.combined.empty()) {
    os << "\n  two remedies at a time: " << a.combined.size() << " tried, " << pairs.size() << " fit"
       << (pairs.empty() ? "\n" : "; the fastest:\n");
    for (size_t i = 0; i < pairs.size() && i < 5; ++i)
      os << "     " << pairs[i]->change.change << "\n" << std::string(29, ' ') << figures(a, *pairs[i]) << "\n";
  }
  if (!a.stacked.empty()) {
    os << "\n  no two fit; applied together, cheapest first:\n";
    for (const TryOutcome& t : a.stacked)
      os << "     " << t.change.change << "\n" << std::string(29, ' ') << figures(a, t) << "\n";
  }
  const TryOutcome* fastest = ranked.empty() ? nullptr : ranked.front(); // more GPUs are faster: said apart
  std::string same_gpus     = "on the same " + format_count(a.given.m.gpus) + (a.given.m.gpus == 1 ? " GPU" : " GPUs");
  // With more GPUs: the try that fits on the fewest, said apart (it changes what is
  // bought), a stack that ends in more GPUs included.
  const TryOutcome* more = nullptr;
  auto consider          = [&](const TryOutcome& t) {
    if (t.ran && t.m.fits && t.m.gpus > g.gpus && (!more || t.m.gpus < more->m.gpus))
      more = &t;
  };
  for (const RemedyOutcome& r : a.remedies)
    for (const TryOutcome& t : r.tries)
      consider(t);
  for (const TryOutcome& t : a.stacked)
    consider(t);
  // Training something else instead (adapters on a frozen base): the cheapest that fits.
  const TryOutcome* instead = nullptr;
  for (const RemedyOutcome& r : a.remedies)
    if (const TryOutcome* t = r.answer(); r.changes_what_trains && t && t->m.fits && !instead)
      instead = t;
  auto more_line = [&] {
    if (more)
      os << "  with more GPUs: " << more->change.change << ", "
         << (a.serving ? format_si(more->m.tokens_per_s, "") + " output tokens/s"
                       : format_duration(more->m.step_time_s))
         << "\n      " << run_line(a, spec_path, *more) << "\n";
    if (instead)
      os << "  training adapters instead of the weights: " << instead->change.change << ", "
         << format_duration(instead->m.step_time_s) << "\n      " << run_line(a, spec_path, *instead) << "\n";
  };
  if (fastest == first && first) {
    os << "\n  first and fastest that fits " << same_gpus << ": " << first_name << ", " << first->change.change
       << "\n      " << run_line(a, spec_path, *first) << "\n";
    more_line();
    return os.str();
  }
  if (fastest) {
    os << "\n  fastest that fits " << same_gpus << ": " << fastest->change.change << "\n      "
       << run_line(a, spec_path, *fastest) << "\n";
    if (first)
      os << "  first that fits (the cheapest remedy): " << first_name << ", " << first->change.change << "\n      "
         << run_line(a, spec_path, *first) << "\n";
    more_line();
    return os.str();
  }
  if (more) {
    os << "\n  nothing fits " << same_gpus << "\n";
    more_line();
    return os.str();
  }
  os << "\n  nothing tried fits: a larger GPU or more of them (memwall list gpus)\n";
  more_line(); // training adapters instead, where that fits
  return os.str();
}

nlohmann::ordered_json advice_json(const Advice& a)
{
  nlohmann::ordered_json j;
  j["given"]    = try_json(a.given);
  j["remedies"] = nlohmann::ordered_json::array();
  for (const RemedyOutcome& r : a.remedies) {
    nlohmann::ordered_json x;
    x["name"] = r.name;
    if (r.changes_what_trains)
      x["changes_what_trains"] = true;
    x["tries"] = nlohmann::ordered_json::array();
    for (const TryOutcome& t : r.tries)
      x["tries"].push_back(try_json(t));
    const TryOutcome* ans = r.answer();
    x["fits"]             = ans && ans->m.fits;
    j["remedies"].push_back(x);
  }
  j["combined"] = nlohmann::ordered_json::array();
  for (const TryOutcome& t : a.combined)
    j["combined"].push_back(try_json(t));
  j["stacked"] = nlohmann::ordered_json::array();
  for (const TryOutcome& t : a.stacked)
    j["stacked"].push_back(try_json(t));
  // The fastest of every try (alone, two at a time, stacked) that fits on the given GPUs.
  std::vector<const TryOutcome*> ranked = a.fitting_fastest_first();
  j["fastest"]                          = ranked.empty() ? nlohmann::ordered_json(nullptr) : try_json(*ranked.front());
  return j;
}

} // namespace memwall

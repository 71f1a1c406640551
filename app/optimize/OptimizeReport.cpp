#include "app/optimize/OptimizeReport.hpp"

#include "app/sweep/SweepReport.hpp"
#include "base/InputError.hpp"
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace memwall {
namespace {

bool has(const ResultsTable& t, const std::string& col) { return t.numbers.count(col) || t.texts.count(col); }

double number(const ResultsTable& t, const std::string& col, size_t row)
{
  auto it = t.numbers.find(col);
  return it == t.numbers.end() ? NAN : it->second.at(row);
}

// The settings of a row's layout as the sweep gave them (the table keeps flags as
// numbers).
const SweepPoint& point_of(const SearchPlan& plan, const ResultsTable& t, size_t row)
{
  return plan.sweep.points.at(static_cast<size_t>(number(t, "index", row)));
}

std::string heading(const std::string& col)
{
  static const std::map<std::string, std::string> names{{"gpus", "GPUs"},
                                                        {"step_time_s", "step time"},
                                                        {"tokens_per_s", "tokens/s"},
                                                        {"mfu", "MFU"},
                                                        {"max_peak_bytes", "peak/GPU"},
                                                        {"breakdown_s.compute", "compute"},
                                                        {"breakdown_s.exposed_comm", "exposed comm"},
                                                        {"breakdown_s.pipeline_bubble", "bubble"},
                                                        {"usd_per_step", "$/step"},
                                                        {"days_to_train", "days"}};
  auto it = names.find(col);
  return it == names.end() ? col : it->second;
}

bool usable(const ResultsTable& t, size_t r)
{
  return t.texts.count("status") && t.texts.at("status")[r] == "ok" && number(t, "fits", r) == 1;
}

struct Part {
  const char* column;
  const char* name;
};
constexpr Part parts[] = {{"breakdown_s.compute", "compute"},
                          {"breakdown_s.exposed_comm", "exposed communication"},
                          {"breakdown_s.pipeline_bubble", "pipeline bubble"},
                          {"breakdown_s.offload_stall", "offload stall"},
                          {"breakdown_s.host_overhead", "host overhead"},
                          {"breakdown_s.paging_stall", "paging stall"}};

const std::string same_figures = "the same step time and memory to within 1 %";

// The parts of the step that differ between two layouts, largest difference first.
std::string why(const ResultsTable& t, size_t best, size_t other)
{
  std::vector<std::pair<double, std::string>> diffs;
  double step = number(t, "step_time_s", best);
  for (const Part& p : parts) {
    double a = number(t, p.column, other), b = number(t, p.column, best);
    if (std::isnan(a) || std::isnan(b) || std::fabs(a - b) < 0.01 * step)
      continue;
    std::vector<std::string> d = format_durations({a, b});
    diffs.emplace_back(-std::fabs(a - b), std::string(p.name) + " " + d[0] + " -> " + d[1]);
  }
  std::sort(diffs.begin(), diffs.end());
  std::string out;
  for (const auto& [_, text] : diffs)
    out += (out.empty() ? "" : ", ") + text;
  double pa = number(t, "max_peak_bytes", other), pb = number(t, "max_peak_bytes", best);
  if (out.empty() && std::fabs(pa - pb) <= 0.01 * pb)
    return same_figures;
  out += std::string(out.empty() ? "" : "; ") + "peak memory " + format_gib(pa) + " -> " + format_gib(pb);
  return out;
}

} // namespace

// A cell of the report: durations with their unit, the rest (dollars per step to three
// significant figures however small among them) as `memwall report` prints them.
std::string optimize_cell(const ResultsTable& t, const std::string& col, size_t row)
{
  double v = number(t, col, row);
  if (col.rfind("breakdown_s.", 0) == 0 && !std::isnan(v))
    return format_duration(v);
  return results_cell(t, col, row);
}

Objective objective_named(const std::string& name)
{
  if (name == "time")
    return {name, "step_time_s", false};
  if (name == "cost")
    return {name, "usd_per_step", false};
  if (name == "energy")
    return {name, "energy.joules_per_step", false};
  if (name == "tokens_per_dollar")
    return {name, "tokens_per_usd", true};
  throw InputError("--objective '" + name + "': expected time, cost, energy or tokens_per_dollar");
}

std::vector<size_t> ranked_rows(const ResultsTable& t, const Objective& o)
{
  std::vector<size_t> rows;
  for (size_t r = 0; r < t.rows(); ++r)
    if (usable(t, r) && !std::isnan(number(t, o.column, r)))
      rows.push_back(r);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    double x = number(t, o.column, a), y = number(t, o.column, b);
    return o.maximise ? x > y : x < y;
  });
  return rows;
}

std::vector<size_t> pareto_rows(const ResultsTable& t)
{
  std::vector<size_t> rows = ranked_rows(t, objective_named("time"));
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    double x = number(t, "step_time_s", a), y = number(t, "step_time_s", b);
    return x != y ? x < y : number(t, "usd_per_step", a) < number(t, "usd_per_step", b);
  });
  std::vector<size_t> front;
  double cheapest = INFINITY;
  for (size_t r : rows)
    if (double usd = number(t, "usd_per_step", r); usd < cheapest) {
      front.push_back(r);
      cheapest = usd;
    }
  return front;
}

std::string layout_text(const SearchPlan& plan, const ResultsTable& t, size_t r)
{
  const SweepPoint& p = point_of(plan, t, r);
  auto v              = [&](const std::string& key) {
    for (const SweepSetting& st : p.settings)
      if (st.key == key)
        return st.text;
    return std::string();
  };
  std::string s;
  // The default stack goes unnamed, as in a run's summary (describe_training).
  if (v("training.stack") != training_stack_registry().default_name() && !v("training.stack").empty())
    s += v("training.stack") + ", ";
  s += "tp " + v("training.tp") + (v("training.sp") == "true" ? " (sp)" : "") + " x pp " + v("training.pp");
  if (!v("training.cp").empty() && v("training.cp") != "1")
    s += " x cp " + v("training.cp");
  s += " x dp " + v("training.dp");
  if (!v("training.ep").empty())
    s += " (ep " + v("training.ep") + ", etp " + v("training.etp") + ")";
  if (v("training.pp") != "1")
    s += ", " + v("training.pipeline_schedule") +
         (v("training.virtual_stages") != "1" ? " v=" + v("training.virtual_stages") : "");
  s += ", micro-batch " + v("training.micro_batch") + ", ZeRO-" + v("training.zero") + ", recompute " +
       v("training.recompute");
  if (v("training.offload.optimizer") != "none" && !v("training.offload.optimizer").empty())
    s += ", optimizer on " + v("training.offload.optimizer");
  if (v("training.offload.params") != "none" && !v("training.offload.params").empty())
    s += ", parameters on " + v("training.offload.params");
  return s;
}

std::string reproduce_command(const SearchPlan& plan, const ResultsTable& t, size_t r)
{
  // The point's settings less those the spec already has.
  std::string s = "memwall run " + plan.spec_file;
  for (const SweepSetting& st : point_of(plan, t, r).settings)
    if (auto v = plan.spec_values.find(st.key); v == plan.spec_values.end() || v->second != st.text)
      s += " --set " + st.key + "=" + st.text;
  return s;
}

long own_row(const SearchPlan& plan, const ResultsTable& t, double gpus)
{
  auto at       = plan.own_by_gpus.find(static_cast<int64_t>(gpus));
  int64_t index = gpus < 0 || at == plan.own_by_gpus.end() ? plan.own_index : at->second;
  for (size_t r = 0; r < t.rows(); ++r)
    if (index >= 0 && number(t, "index", r) == static_cast<double>(index))
      return static_cast<long>(r);
  return -1;
}

std::string optimize_report_text(const SearchPlan& plan, const ResultsTable& t, const OptimizeReportOptions& o)
{
  std::ostringstream os;
  size_t replayed = t.rows(), fit = 0, errors = 0;
  for (size_t r = 0; r < t.rows(); ++r) {
    fit += usable(t, r) ? 1 : 0;
    errors += t.texts.at("status")[r] == "ok" ? 0 : 1;
  }
  std::string gpus;
  for (int64_t g : plan.gpus)
    gpus += (gpus.empty() ? "" : ", ") + format_count(static_cast<double>(g));
  os << "memwall optimize: " << plan.spec_file << " on " << gpus << " GPUs, objective " << o.objective.name << "\n";
  os << "  " << format_count(static_cast<double>(plan.enumerated))
     << " layouts enumerated: " << format_count(static_cast<double>(plan.invalid)) << " invalid";
  if (!plan.invalid_by_key.empty()) {
    std::vector<std::pair<int64_t, std::string>> keys;
    for (const auto& [k, n] : plan.invalid_by_key)
      keys.emplace_back(-n, k);
    std::sort(keys.begin(), keys.end());
    std::string list;
    for (size_t i = 0; i < std::min<size_t>(3, keys.size()); ++i)
      list += (list.empty() ? "" : ", ") + keys[i].second + " " + format_count(static_cast<double>(-keys[i].first));
    os << " (" << list << ")";
  }
  os << ", " << format_count(static_cast<double>(plan.cannot_fit)) << " cannot fit (model states alone exceed the GPU)"
     << ", " << format_count(static_cast<double>(replayed)) << " replayed";
  os << ": " << format_count(static_cast<double>(fit)) << " fit";
  if (errors)
    os << ", " << errors << " failed";
  os << "\n";
  std::vector<size_t> best = ranked_rows(t, o.objective);
  if (best.empty()) {
    os << "\n  no layout fits: "
       << (o.results_path.empty() ? std::string("run again with -o RESULTS.h5 and see `memwall report RESULTS.h5`")
                                  : "see `memwall report " + o.results_path + "`")
       << " for what each needed\n";
    return os.str();
  }
  size_t n       = std::min(o.top, best.size());
  bool many_gpus = plan.gpus.size() > 1;
  os << "\n  best " << n << " by " << o.objective.column << (o.objective.maximise ? " (highest first)" : "") << "\n";
  std::vector<std::vector<std::string>> cells{{"#"}};
  std::vector<std::string> cols{"step_time_s",
                                "tokens_per_s",
                                "mfu",
                                "max_peak_bytes",
                                "breakdown_s.compute",
                                "breakdown_s.exposed_comm",
                                "breakdown_s.pipeline_bubble",
                                "usd_per_step"};
  if (many_gpus)
    cols.insert(cols.begin(), "gpus");
  if (has(t, "days_to_train"))
    cols.push_back("days_to_train");
  for (const std::string& c : cols)
    cells[0].push_back(heading(c));
  cells[0].push_back("layout");
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> line{std::to_string(i + 1)};
    for (const std::string& c : cols)
      line.push_back(optimize_cell(t, c, best[i]));
    line.push_back(layout_text(plan, t, best[i]));
    cells.push_back(std::move(line));
  }
  print_aligned(os, cells, true);

  // The spec's own layout at #1's GPU count (its dp scaled where the count is not its own).
  double best_gpus = number(t, "gpus", best[0]);
  long own         = own_row(plan, t, best_gpus);
  bool scaled      = own >= 0 && static_cast<size_t>(own) != static_cast<size_t>(own_row(plan, t));
  std::string at   = scaled ? " at " + format_count(best_gpus) + " GPUs, dp scaled" : "";
  os << "\n  why #1 wins\n";
  if (own >= 0 && static_cast<size_t>(own) != best[0])
    os << "    against the spec's own layout" << at << " (" << layout_text(plan, t, static_cast<size_t>(own)) << ", "
       << results_cell(t, "step_time_s", static_cast<size_t>(own))
       << (usable(t, static_cast<size_t>(own)) ? "" : ", does not fit")
       << "): " << why(t, best[0], static_cast<size_t>(own)) << "\n";
  else if (own >= 0)
    os << "    it is the spec's own layout" << at << "\n";
  // Layouts that tie with #1 (step time and memory within 1 %) are one line; the runner-up
  // is the first that differs.
  size_t ties = 0;
  while (ties + 1 < best.size() && why(t, best[0], best[ties + 1]) == same_figures)
    ++ties;
  if (ties > 0)
    os << "    " << (ties == 1 ? "#2" : "#2 to #" + std::to_string(ties + 1)) << ": " << same_figures << " ("
       << (ties == 1 ? "another layout" : std::to_string(ties) + " other layouts") << ")\n";
  if (ties + 1 < best.size())
    os << "    against #" << ties + 2 << ": " << why(t, best[0], best[ties + 1]) << "\n";

  std::vector<size_t> front = pareto_rows(t);
  if (front.size() > 1 || many_gpus) {
    os << "\n  Pareto front: step time against dollars per step (hardware "
       << "and energy)\n";
    std::vector<std::vector<std::string>> pc{
        {heading("gpus"), heading("step_time_s"), heading("usd_per_step"), "hardware", "layout"}};
    for (size_t r : front)
      pc.push_back({optimize_cell(t, "gpus", r), optimize_cell(t, "step_time_s", r),
                    optimize_cell(t, "usd_per_step", r), optimize_cell(t, "hardware_cost_usd", r),
                    layout_text(plan, t, r)});
    print_aligned(os, pc, true);
  }
  os << "\n  reproduce #1: " << reproduce_command(plan, t, best[0]) << "\n";
  if (!o.results_path.empty())
    os << "  every layout replayed: " << o.results_path << " (memwall report, memwall plot)\n";
  return os.str();
}

nlohmann::ordered_json layout_json(const SearchPlan& plan, const ResultsTable& t, size_t r)
{
  nlohmann::ordered_json j;
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  for (const SweepSetting& st : point_of(plan, t, r).settings)
    settings[st.key] = st.text;
  j["layout"]   = layout_text(plan, t, r);
  j["settings"] = settings;
  for (const char* col :
       {"gpus", "step_time_s", "tokens_per_s", "mfu", "max_peak_bytes", "breakdown_s.compute",
        "breakdown_s.exposed_comm", "breakdown_s.pipeline_bubble", "breakdown_s.offload_stall", "usd_per_step",
        "tokens_per_usd", "energy.joules_per_step", "hardware_cost_usd", "days_to_train", "usd_to_train"})
    if (t.numbers.count(col))
      j[col] = number(t, col, r);
  j["reproduce"] = reproduce_command(plan, t, r);
  return j;
}

nlohmann::ordered_json optimize_report_json(const SearchPlan& plan, const ResultsTable& t,
                                            const OptimizeReportOptions& o)
{
  nlohmann::ordered_json j;
  j["spec"]                = plan.spec_file;
  j["gpus"]                = plan.gpus;
  j["objective"]           = o.objective.name;
  j["enumerated"]          = plan.enumerated;
  j["invalid"]             = plan.invalid;
  j["cannot_fit"]          = plan.cannot_fit;
  j["replayed"]            = t.rows();
  std::vector<size_t> best = ranked_rows(t, o.objective);
  j["fit"]                 = best.size();
  j["best"]                = nlohmann::ordered_json::array();
  for (size_t i = 0; i < std::min(o.top, best.size()); ++i)
    j["best"].push_back(layout_json(plan, t, best[i]));
  long own    = own_row(plan, t, best.empty() ? -1.0 : number(t, "gpus", best.front()));
  j["own"]    = own >= 0 ? layout_json(plan, t, static_cast<size_t>(own)) : nlohmann::ordered_json(nullptr);
  j["pareto"] = nlohmann::ordered_json::array();
  for (size_t r : pareto_rows(t))
    j["pareto"].push_back(layout_json(plan, t, r));
  return j;
}

} // namespace memwall

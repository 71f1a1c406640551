#include "app/sweep/SweepReport.hpp"
#include "app/sweep/TimingComparison.hpp"

#include "base/InputError.hpp"
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>

namespace memwall {
namespace {

std::string ends(const std::string& s, const std::string& tail)
{
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0 ? tail : "";
}

// One cell, in the unit a reader expects for the column's name.
std::string cell(const ResultsTable& t, const std::string& col, size_t row)
{
  if (auto x = t.texts.find(col); x != t.texts.end())
    return x->second[row];
  double v = t.numbers.at(col)[row];
  if (std::isnan(v))
    return "-";
  char buf[64];
  if (col == "fits")
    return v != 0 ? "yes" : "no";
  if (!ends(col, "_bytes").empty() || col.rfind("gpu.peak.", 0) == 0)
    return format_gib(v);
  // Dollars only where the column is dollars: a price (*_usd), dollars per something
  // (usd_per_step, energy.usd_per_step, usd_to_train; cents and below kept), never a
  // count per dollar (tokens_per_usd).
  std::string leaf = col.substr(col.rfind('.') + 1);
  bool per_dollar  = !ends(col, "_per_usd").empty();
  if (col == "mfu" || !ends(col, "utilization").empty())
    std::snprintf(buf, sizeof buf, "%.1f %%", 100 * v);
  else if (per_dollar)
    return (std::fabs(v) >= 1000 ? format_count(v) : (std::snprintf(buf, sizeof buf, "%.4g", v), std::string(buf))) +
           " per $";
  else if (leaf == "usd_per_mwh")
    return format_usd(v) + "/MWh";
  else if (!ends(col, "power_w").empty())
    return format_si(v, "W");
  else if (!ends(col, "_usd").empty() || leaf.rfind("usd_", 0) == 0) {
    if (std::fabs(v) >= 100)
      return format_usd(v);
    if (std::fabs(v) >= 1)
      return format_usd_cents(v);
    std::snprintf(buf, sizeof buf, "$%.3g", v);
  } else {
    // Four significant digits below a thousand, whole numbers with separators above
    // ("630,200 tokens/s", "1,904,000 GPU-hours"), never "6.302e+05".
    bool seconds = !ends(col, "_s").empty() && col.find("per_s") == std::string::npos;
    if (std::fabs(v) >= 1000)
      return format_count(v) + (seconds ? " s" : "");
    std::snprintf(buf, sizeof buf, seconds ? "%.4g s" : "%.4g", v);
  }
  return buf;
}

// The axis key's last part when no other axis ends the same way ("micro_batch").
std::string header(const ResultsTable& t, const std::string& col)
{
  if (std::find(t.axes.begin(), t.axes.end(), col) == t.axes.end())
    return col;
  std::string tail = col.substr(col.rfind('.') + 1);
  int same         = 0;
  for (const std::string& a : t.axes)
    same += a.substr(a.rfind('.') + 1) == tail ? 1 : 0;
  return same == 1 ? tail : col;
}

bool has(const ResultsTable& t, const std::string& col) { return t.numbers.count(col) || t.texts.count(col); }

bool varies(const ResultsTable& t, const std::string& col, const std::vector<size_t>& rows)
{
  for (size_t r : rows)
    if (cell(t, col, r) != cell(t, col, rows.front()))
      return true;
  return false;
}

// Rows as a right-aligned text table with a header line.
void print_table(std::ostream& os, const ResultsTable& t, const std::vector<std::string>& cols,
                 const std::vector<size_t>& rows, const std::vector<std::string>& extra_header = {},
                 const std::vector<std::string>& extra = {})
{
  std::vector<std::vector<std::string>> cells(rows.size() + 1);
  for (const std::string& c : cols)
    cells[0].push_back(header(t, c));
  cells[0].insert(cells[0].end(), extra_header.begin(), extra_header.end());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const std::string& c : cols)
      cells[i + 1].push_back(cell(t, c, rows[i]));
    if (!extra.empty())
      cells[i + 1].push_back(extra[i]);
  }
  print_aligned(os, cells, !extra.empty());
}

std::string why_not_fit(const ResultsTable& t, size_t r)
{
  std::string why;
  for (const char* kind : {"gpu", "host", "nvme"}) {
    std::string k = kind;
    auto oom      = t.numbers.find(k + ".oom_count");
    if (oom == t.numbers.end() || !(oom->second[r] > 0))
      continue;
    std::string name = has(t, k + ".name") ? cell(t, k + ".name", r) : k;
    std::string hw   = has(t, k + ".hardware") ? " (" + cell(t, k + ".hardware", r) + ")" : "";
    why += (why.empty() ? "" : "; ") + name + hw + " needs " + cell(t, k + ".peak_bytes", r) + " of " +
           cell(t, k + ".capacity_bytes", r);
    if (k != "gpu")
      continue;
    std::vector<std::pair<double, std::string>> cats;
    for (const std::string& c : t.columns)
      if (c.rfind("gpu.peak.", 0) == 0 && t.numbers.count(c) && t.numbers.at(c)[r] > 0)
        cats.emplace_back(t.numbers.at(c)[r], c.substr(9));
    std::sort(cats.rbegin(), cats.rend());
    for (size_t i = 0; i < cats.size() && i < 2; ++i)
      why += (i ? ", " : ": ") + cats[i].second + " " + format_gib(cats[i].first);
  }
  return why.empty() ? "out of memory" : why;
}

std::vector<std::string> key_figures(const ResultsTable& t, const std::string& by, const std::vector<size_t>& rows)
{
  bool serving                    = has(t, "ttft_s.p50");
  std::vector<std::string> wanted = serving
                                        ? std::vector<std::string>{"output_tokens_per_s", "ttft_s.p50", "tpot_s.p50",
                                                                   "latency_s.p99", "requests_rejected"}
                                        : std::vector<std::string>{"step_time_s", "tokens_per_s", "mfu"};
  wanted.insert(wanted.end(), {"gpu.peak_bytes", "gpus", "hardware_cost_usd"});
  wanted.insert(wanted.end(), t.metrics.begin(), t.metrics.end());
  std::vector<std::string> cols{by};
  for (const std::string& c : wanted)
    if (c != by && has(t, c) && !rows.empty() && varies(t, c, rows))
      cols.push_back(c);
  return cols;
}

} // namespace

std::string results_cell(const ResultsTable& t, const std::string& col, size_t row) { return cell(t, col, row); }

void print_aligned(std::ostream& os, const std::vector<std::vector<std::string>>& cells, bool last_left)
{
  std::vector<size_t> width;
  for (const auto& line : cells) {
    width.resize(std::max(width.size(), line.size()), 0);
    for (size_t c = 0; c < line.size(); ++c)
      width[c] = std::max(width[c], line[c].size());
  }
  for (const auto& line : cells) {
    std::string text = " ";
    for (size_t c = 0; c < line.size(); ++c) {
      bool left = last_left && c + 1 == line.size(); // a free-text column
      std::string pad(width[c] - line[c].size(), ' ');
      text += "  " + (left ? line[c] : pad + line[c]);
    }
    os << text << "\n";
  }
}

std::string sweep_csv(const ResultsTable& t)
{
  auto quoted = [](const std::string& v) {
    if (v.find_first_of(",\"\n\r") == std::string::npos)
      return v;
    std::string q = "\"";
    for (char c : v)
      q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::ostringstream os;
  for (size_t c = 0; c < t.columns.size(); ++c)
    os << (c ? "," : "") << quoted(t.columns[c]);
  os << "\n";
  for (size_t r = 0; r < t.rows(); ++r) {
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const std::string& col = t.columns[c];
      os << (c ? "," : "");
      if (auto x = t.texts.find(col); x != t.texts.end()) {
        os << quoted(x->second[r]);
      } else if (double v = t.numbers.at(col)[r]; !std::isnan(v)) {
        os << format_exact(v);
      }
    }
    os << "\n";
  }
  return os.str();
}

bool higher_is_better(const std::string& metric)
{
  // Rates (per second), what a dollar or a joule buys, MFU, utilization, fitting. The
  // rest (times, bytes, dollars, joules, days, GPU-hours) are better lower.
  auto has = [&](const char* part) { return metric.find(part) != std::string::npos; };
  return (has("per_s") && !has("per_step")) || has("_per_usd") || has("_per_joule") || metric == "mfu" ||
         has("utilization") || metric == "fits";
}

std::string sweep_report_text(const ResultsTable& t, const std::string& path, const SweepReportOptions& o)
{
  std::string by = o.by.empty() ? (has(t, "ttft_s.p50") ? "output_tokens_per_s" : "step_time_s") : o.by;
  auto known     = [&](const std::string& c, const char* option) {
    if (has(t, c))
      return;
    std::string list;
    for (const std::string& x : t.columns)
      list += (list.empty() ? "" : ", ") + x;
    throw InputError(path + ": " + option + " " + c + ": no such column; the columns are " + list);
  };
  // A sweep whose every point failed has no result columns: list the failures then.
  const auto& status = t.texts.count("status") ? t.texts.at("status") : std::vector<std::string>{};
  bool any_ran       = std::find(status.begin(), status.end(), "ok") != status.end();
  if (any_ran || !o.by.empty())
    known(by, "--by");
  for (const std::string& c : o.columns)
    known(c, "--columns");
  if (!o.order.empty() && o.order != "asc" && o.order != "desc")
    throw InputError("report: --order " + o.order + ": allowed are asc and desc");
  bool descending = o.order.empty() ? higher_is_better(by) : o.order == "desc";

  std::vector<size_t> fitting, not_fitting, failed;
  for (size_t r = 0; r < t.rows(); ++r) {
    if (t.texts.at("status")[r] != "ok")
      failed.push_back(r);
    else if (t.numbers.count("fits") && t.numbers.at("fits")[r] == 0)
      not_fitting.push_back(r);
    else
      fitting.push_back(r);
  }

  std::ostringstream os;
  os << "memwall sweep results: " << path << "\n";
  const auto& a = t.attributes;
  os << "  sweep " << a.at("sweep_file") << ", memwall " << a.at("memwall_version") << " (git " << a.at("git_commit")
     << "), " << a.at("started_at") << " to " << (a.at("finished_at").empty() ? "(unfinished)" : a.at("finished_at"))
     << "\n";
  os << "  " << t.rows() << " of " << static_cast<long long>(t.points_total) << " points: " << fitting.size()
     << " fit, " << not_fitting.size() << (not_fitting.size() == 1 ? " does" : " do") << " not fit, " << failed.size()
     << " failed\n";

  std::vector<size_t> ranked = fitting;
  if (has(t, by) && t.numbers.count(by)) {
    const std::vector<double>& v = t.numbers.at(by);
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t x, size_t y) {
      if (std::isnan(v[x]) || std::isnan(v[y]))
        return !std::isnan(v[x]) && std::isnan(v[y]);
      return descending ? v[x] > v[y] : v[x] < v[y];
    });
  }
  std::vector<std::string> cols{"index"};
  cols.insert(cols.end(), t.axes.begin(), t.axes.end());
  std::vector<std::string> figures = o.columns.empty() ? key_figures(t, by, fitting) : o.columns;
  if (!o.columns.empty() && std::find(figures.begin(), figures.end(), by) == figures.end())
    figures.insert(figures.begin(), by);
  // The index and the axes are already there: a figure naming one is not shown twice.
  for (const std::string& f : figures)
    if (std::find(cols.begin(), cols.end(), f) == cols.end())
      cols.push_back(f);
  if (!ranked.empty()) {
    size_t n = std::min(o.top, ranked.size());
    os << "\nTop " << n << " of " << ranked.size() << " fitting points by " << by
       << (descending ? " (highest first)\n" : " (lowest first)\n");
    print_table(os, t, cols, std::vector<size_t>(ranked.begin(), ranked.begin() + static_cast<long>(n)));
  }

  std::vector<size_t> ran = fitting;
  ran.insert(ran.end(), not_fitting.begin(), not_fitting.end());
  os << timing_comparison_text(sweep_machines(t, ran));

  if (!not_fitting.empty()) {
    size_t n = std::min(o.top, not_fitting.size());
    os << "\n"
       << not_fitting.size() << " point" << (not_fitting.size() == 1 ? " does" : "s do")
       << " not fit (the overflowing device needs its peak; largest categories)\n";
    std::vector<size_t> shown(not_fitting.begin(), not_fitting.begin() + static_cast<long>(n));
    std::vector<std::string> why;
    for (size_t r : shown)
      why.push_back(why_not_fit(t, r));
    std::vector<std::string> axis_cols{"index"};
    axis_cols.insert(axis_cols.end(), t.axes.begin(), t.axes.end());
    print_table(os, t, axis_cols, shown, {"why"}, why);
    if (n < not_fitting.size())
      os << "  ... and " << not_fitting.size() - n << " more (--top N shows more)\n";
  }

  if (!failed.empty()) {
    os << "\n" << failed.size() << " point" << (failed.size() == 1 ? "" : "s") << " failed\n";
    std::map<std::string, std::vector<size_t>> by_message;
    std::vector<std::string> order;
    for (size_t r : failed) {
      const std::string& e = t.texts.at("error")[r];
      if (!by_message.count(e))
        order.push_back(e);
      by_message[e].push_back(r);
    }
    for (const std::string& e : order) {
      const auto& rows = by_message[e];
      os << "  " << e << "\n";
      for (size_t i = 0; i < rows.size() && i < o.top; ++i) {
        std::string settings;
        for (const std::string& ax : t.axes)
          settings += (settings.empty() ? "" : ", ") + header(t, ax) + " " + cell(t, ax, rows[i]);
        os << "    index " << cell(t, "index", rows[i]) << ": " << settings << "\n";
      }
      if (rows.size() > o.top)
        os << "    ... and " << rows.size() - o.top << " more\n";
    }
  }
  return os.str();
}

} // namespace memwall

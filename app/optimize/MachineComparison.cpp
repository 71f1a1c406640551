#include "app/optimize/MachineComparison.hpp"

#include "app/sweep/SweepReport.hpp"
#include "app/sweep/TimingComparison.hpp"
#include "base/NumberFormat.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>
#include <sstream>

namespace memwall {

std::vector<ComparedRow> compared_rows(const std::vector<SearchedMachine>& machines, const Objective& o)
{
  std::vector<ComparedRow> out;
  for (size_t m = 0; m < machines.size(); ++m) {
    const ResultsTable& t = machines[m].table;
    std::map<double, size_t> best; // by GPU count: the first ranked row
    for (size_t r : ranked_rows(t, o))
      best.try_emplace(t.numbers.at("gpus")[r], r);
    for (const auto& [gpus, r] : best)
      out.push_back({m, r});
  }
  return out;
}

void write_comparison_file(const std::string& path, const std::vector<SearchedMachine>& machines,
                           const std::vector<ComparedRow>& rows)
{
  SweepSpec sweep;
  sweep.file = "memwall optimize --compare";
  for (const SearchedMachine& m : machines)
    sweep.text += (sweep.text.empty() ? "" : " ") + m.plan.spec_file;
  sweep.axes = {"machine"};
  std::map<int64_t, SweepRow> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const SearchedMachine& m = machines[rows[i].machine];
    const ResultsTable& t    = m.table;
    size_t r                 = rows[i].row;
    SweepPoint p;
    p.index = static_cast<int64_t>(i);
    p.settings.push_back({"machine", YAML::Node(m.name), m.name});
    sweep.points.push_back(p);
    SweepRow row;
    row.index = p.index;
    for (const auto& [col, values] : t.numbers)
      if (col != "index" && std::find(t.axes.begin(), t.axes.end(), col) == t.axes.end())
        row.numbers.emplace_back(col, values[r]);
    for (const auto& [col, values] : t.texts)
      if (col != "status" && col != "error" && std::find(t.axes.begin(), t.axes.end(), col) == t.axes.end())
        row.texts.emplace_back(col, values[r]);
    row.texts.emplace_back("layout", layout_text(m.plan, t, r));
    row.texts.emplace_back("reproduce", reproduce_command(m.plan, t, r));
    out[p.index] = std::move(row);
  }
  SweepFileInfo info;
  info.started_at = info.finished_at = timestamp_now();
  write_sweep_file(path, sweep, out, info);
}

std::string comparison_text(const std::vector<SearchedMachine>& machines, const std::vector<ComparedRow>& rows,
                            const Objective& o)
{
  std::ostringstream os;
  os << "memwall optimize --compare: each machine's best layout by " << o.column << "\n";
  for (const SearchedMachine& m : machines)
    os << "  " << m.name << ": " << format_count(static_cast<double>(m.plan.enumerated)) << " layouts enumerated, "
       << format_count(static_cast<double>(m.table.rows())) << " replayed\n";
  bool days = !rows.empty() && machines[rows[0].machine].table.numbers.count("days_to_train");
  std::vector<std::vector<std::string>> cells{{"machine", "GPUs", "step time", "tokens/s", "MFU", "$/step"}};
  if (days)
    cells[0].insert(cells[0].end(), {"days", "$ to train"});
  cells[0].insert(cells[0].end(), {"hardware", "layout"});
  for (const ComparedRow& c : rows) {
    const ResultsTable& t = machines[c.machine].table;
    std::vector<std::string> line{machines[c.machine].name,
                                  optimize_cell(t, "gpus", c.row),
                                  optimize_cell(t, "step_time_s", c.row),
                                  optimize_cell(t, "tokens_per_s", c.row),
                                  optimize_cell(t, "mfu", c.row),
                                  optimize_cell(t, "usd_per_step", c.row)};
    if (days)
      line.insert(line.end(), {optimize_cell(t, "days_to_train", c.row), optimize_cell(t, "usd_to_train", c.row)});
    line.insert(line.end(),
                {optimize_cell(t, "hardware_cost_usd", c.row), layout_text(machines[c.machine].plan, t, c.row)});
    cells.push_back(std::move(line));
  }
  os << "\n";
  print_aligned(os, cells, true);
  // Each machine's timing sources, from its best row (every row of a machine shares its GPU).
  std::vector<MachineTiming> timing;
  for (size_t m = 0; m < machines.size(); ++m)
    for (const ComparedRow& c : rows)
      if (c.machine == m) {
        timing.push_back(row_timing(machines[m].table, c.row, machines[m].name));
        break;
      }
  os << timing_comparison_text(timing);
  for (size_t m = 0; m < machines.size(); ++m) {
    bool any = false;
    for (const ComparedRow& c : rows)
      any = any || c.machine == m;
    if (!any)
      os << "  " << machines[m].name << ": no layout fits\n";
  }
  return os.str();
}

} // namespace memwall

#include "app/sweep/TimingComparison.hpp"

#include "base/ParamReader.hpp"
#include "hwmodels/TimingSources.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace memwall {
namespace {

std::string text_at(const ResultsTable& t, const std::string& col, size_t row)
{
  auto it = t.texts.find(col);
  return it == t.texts.end() || row >= it->second.size() ? "" : it->second[row];
}

} // namespace

MachineTiming row_timing(const ResultsTable& t, size_t row, const std::string& machine)
{
  MachineTiming m{machine, {}};
  for (const std::string& part : timing_parts()) {
    std::string s = text_at(t, "hardware_profile.timing." + part, row);
    if (s.empty()) // a file written before timing sources were kept
      return {machine, {}};
    m.sources.push_back(s);
  }
  return m;
}

std::vector<MachineTiming> sweep_machines(const ResultsTable& t, const std::vector<size_t>& rows)
{
  // One GPU under two profiles (hardware.profile swept) is two machines.
  std::map<std::string, std::set<std::string>> profiles;
  for (size_t r : rows)
    profiles[text_at(t, "gpu.hardware", r)].insert(text_at(t, "hardware_profile.name", r));
  std::vector<MachineTiming> out;
  std::set<std::string> seen;
  for (size_t r : rows) {
    std::string gpu = text_at(t, "gpu.hardware", r);
    std::string name =
        profiles[gpu].size() > 1 ? gpu + " (profile " + text_at(t, "hardware_profile.name", r) + ")" : gpu;
    if (!gpu.empty() && seen.insert(name).second)
      out.push_back(row_timing(t, r, name));
  }
  return out;
}

std::string timing_comparison_text(const std::vector<MachineTiming>& machines)
{
  if (machines.size() < 2 ||
      std::any_of(machines.begin(), machines.end(), [](const MachineTiming& m) { return m.sources.empty(); }))
    return "";
  std::vector<std::string> parts = timing_parts();
  std::vector<std::vector<std::string>> cells{{"timed by part"}};
  for (const MachineTiming& m : machines)
    cells[0].push_back(m.machine);
  std::vector<std::string> differ;
  for (size_t p = 0; p < parts.size(); ++p) {
    std::vector<std::string> line{timing_part_title(parts[p])};
    // Measured and derived (a measurement scaled by the hardware's ratios) stand on the
    // same footing; an estimate beside either does not. "none" (no NVLink) is hardware.
    bool grounded = false, estimated = false;
    for (const MachineTiming& m : machines) {
      line.push_back(m.sources[p]);
      // "measured (scaled: ...)": a measurement scaled to the GPU's changed figures.
      grounded  = grounded || m.sources[p].starts_with("measured") || m.sources[p].starts_with("derived");
      estimated = estimated || m.sources[p] == "estimated";
    }
    if (grounded && estimated)
      differ.push_back(timing_part_title(parts[p]));
    cells.push_back(std::move(line));
  }
  std::ostringstream os;
  os << "\n";
  std::vector<size_t> width(cells[0].size(), 0); // words: every column left-aligned
  for (const auto& line : cells)
    for (size_t c = 0; c < line.size(); ++c)
      width[c] = std::max(width[c], line[c].size());
  for (const auto& line : cells) {
    std::string text = " ";
    for (size_t c = 0; c < line.size(); ++c)
      text += " " + line[c] + (c + 1 < line.size() ? std::string(width[c] - line[c].size() + 1, ' ') : "");
    os << text << "\n";
  }
  if (differ.empty())
    os << "  every part is timed on the same footing on every machine (measured, or derived from a measurement)\n";
  else
    os << "  warning: " << join(differ) << " are"
       << " measured on some machines and estimated on others:\n"
       << "           that part of their difference is calibration, not hardware (memwall calibrate measures a GPU)\n";
  return os.str();
}

} // namespace memwall

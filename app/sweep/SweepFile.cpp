#include "app/sweep/SweepFile.hpp"

#include "analysis/Hdf5Table.hpp"
#include "analysis/Hdf5Writer.hpp"
#include "analysis/ResultsFile.hpp"
#include "analysis/RunTables.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"
#include "base/JsonInput.hpp"
#include "base/JsonOutput.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <set>

namespace memwall {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

std::string format_g(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string run_group_name(int64_t index)
{
  char name[32];
  std::snprintf(name, sizeof name, "%06lld", static_cast<long long>(index));
  return name;
}

// Metric columns in order of first appearance over the rows (in index order).
void metric_columns(const std::map<int64_t, SweepRow>& rows, std::vector<std::string>& numbers,
                    std::vector<std::string>& texts)
{
  std::set<std::string> seen;
  for (const auto& [i, row] : rows) {
    for (const auto& [k, v] : row.numbers)
      if (seen.insert(k).second)
        numbers.push_back(k);
    for (const auto& [k, v] : row.texts)
      if (seen.insert(k).second)
        texts.push_back(k);
  }
}

void write_column(H5::Group& g, const std::string& name, const std::vector<std::string>& v) { column(g, name, v); }

// Counts as int64 and flags as booleans, as pandas users expect them; a row without a
// value (an error) holds -1 or false there, NaN in a double column.
void write_column(H5::Group& g, const std::string& name, const std::vector<double>& v)
{
  ColumnKind kind = result_column_kind(name);
  if (kind == ColumnKind::whole) {
    std::vector<int64_t> w;
    for (double x : v)
      w.push_back(std::isnan(x) ? -1 : static_cast<int64_t>(std::llround(x)));
    column(g, name, w);
  } else if (kind == ColumnKind::flag) {
    std::vector<int8_t> f;
    for (double x : v)
      f.push_back(!std::isnan(x) && x != 0 ? 1 : 0);
    flag_column(g, name, f);
  } else {
    column(g, name, v);
  }
}

// One column per name, in `names` order, filled from every row's (name, value) pairs in
// one pass over the rows; `missing` where a row has no value.
template <typename T>
void write_metric_columns(H5::Group& g, const std::map<int64_t, SweepRow>& rows, const std::vector<std::string>& names,
                          std::vector<std::pair<std::string, T>> SweepRow::*values, const T& missing,
                          std::vector<std::string>& columns)
{
  std::map<std::string, size_t> at;
  for (size_t c = 0; c < names.size(); ++c)
    at.emplace(names[c], c);
  std::vector<std::vector<T>> table(names.size(), std::vector<T>(rows.size(), missing));
  size_t r = 0;
  for (const auto& [i, row] : rows) {
    for (const auto& [name, value] : row.*values)
      if (auto it = at.find(name); it != at.end())
        table[it->second][r] = value;
    ++r;
  }
  for (size_t c = 0; c < names.size(); ++c) {
    write_column(g, names[c], table[c]);
    columns.push_back(names[c]);
  }
}

// An axis whose every value in the sweep (not only the rows written so far, so that the
// column's type does not change as a sweep resumes) is a whole number: tp, micro_batch,
// layers. Stored as int64 so pandas reads integers.
bool integral_axis(const SweepSpec& sweep, const std::string& key)
{
  for (const SweepPoint& p : sweep.points)
    for (const SweepSetting& s : p.settings)
      if (s.key == key) {
        ExprValue v     = setting_value(s);
        const double* d = std::get_if<double>(&v);
        if (!d || *d != std::floor(*d) || std::fabs(*d) > 9007199254740992.0) // 2^53: exact in a double
          return false;
      }
  return true;
}

void write_points(H5::Group& root, const SweepSpec& sweep, const std::map<int64_t, SweepRow>& rows)
{
  H5::Group g = root.createGroup("points");
  std::vector<std::string> columns{"index"};
  std::vector<int64_t> index;
  for (const auto& [i, row] : rows)
    index.push_back(i);
  column(g, "index", index);
  for (size_t a = 0; a < sweep.axes.size(); ++a) {
    const std::string& key = sweep.axes[a];
    bool numeric           = true;
    std::vector<double> nums;
    std::vector<std::string> texts;
    for (const auto& [i, row] : rows)
      for (const SweepSetting& s : sweep.points.at(static_cast<size_t>(i)).settings)
        if (s.key == key) {
          ExprValue v = setting_value(s);
          numeric     = numeric && std::holds_alternative<double>(v);
          nums.push_back(numeric ? std::get<double>(v) : 0.0);
          texts.push_back(s.text);
        }
    if (numeric && integral_axis(sweep, key))
      column(g, key, std::vector<int64_t>(nums.begin(), nums.end()));
    else if (numeric)
      column(g, key, nums);
    else
      column(g, key, texts);
    columns.push_back(key);
  }
  std::vector<std::string> status, error;
  for (const auto& [i, row] : rows) {
    status.push_back(row.error.empty() ? "ok" : "error");
    error.push_back(row.error);
  }
  column(g, "status", status);
  column(g, "error", error);
  columns.push_back("status");
  columns.push_back("error");
  std::vector<std::string> num_cols, text_cols;
  metric_columns(rows, num_cols, text_cols);
  write_metric_columns(g, rows, num_cols, &SweepRow::numbers, nan, columns);
  write_metric_columns(g, rows, text_cols, &SweepRow::texts, std::string(), columns);
  attribute(g, "columns", json_text(nlohmann::json(columns)));
  attribute(g, "axes", json_text(nlohmann::json(sweep.axes)));
  std::vector<std::string> derived;
  for (const auto& [name, expr] : sweep.metrics)
    derived.push_back(name);
  attribute(g, "metrics", json_text(nlohmann::json(derived)));
}

// A JSON list of names kept in an attribute of /points.
std::vector<std::string> name_list(const H5::Group& g, const std::string& name, const std::string& path)
{
  nlohmann::json j;
  std::string why = parse_json_checked(text_attribute(g, name).value_or("[]"), j);
  if (!why.empty() || !j.is_array() ||
      !std::all_of(j.begin(), j.end(), [](const nlohmann::json& x) { return x.is_string(); }))
    throw InputError(path + ": /points attribute '" + name + "' is not a JSON list of names; the file is corrupt");
  return j.get<std::vector<std::string>>();
}

// The table as memwall writes it. A file forged or edited into another shape (no
// index, a status of neither value, an axis without its column) is refused here, once,
// so that no reader indexes past a column. (Columns of unequal length never get here:
// memwall_file_format refuses them for every table of every results file.)
void check_table(const std::string& path, const ResultsTable& t)
{
  auto corrupt = [&](const std::string& what) { throw InputError(path + ": " + what + "; the file is corrupt"); };
  std::set<std::string> listed;
  for (const std::string& c : t.columns)
    if (!listed.insert(c).second)
      corrupt("/points lists column '" + c + "' twice");
  if (!t.numbers.count("index"))
    corrupt("/points has no numeric 'index' column");
  for (const char* c : {"status", "error"})
    if (!t.texts.count(c))
      corrupt(std::string("/points has no text '") + c + "' column");
  for (const std::string& a : t.axes)
    if (!listed.count(a))
      corrupt("/points has no column for the axis '" + a + "'");
  size_t rows                            = t.numbers.at("index").size();
  const std::vector<std::string>& status = t.texts.at("status");
  for (size_t r = 0; r < rows; ++r)
    if (status[r] != "ok" && status[r] != "error")
      corrupt("/points/status row " + std::to_string(r) + " is '" + status[r] + "', not 'ok' or 'error'");
  if (!(t.points_total >= static_cast<double>(rows) && t.points_total <= 1e12) ||
      t.points_total != std::floor(t.points_total))
    corrupt("points_total " + format_g(t.points_total) + " is not a count of at least the " + std::to_string(rows) +
            " rows");
}

} // namespace

std::string timestamp_now()
{
  std::time_t t = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    // The reproducible-builds convention: whole seconds since 1970, UTC. Anything else is
    // refused: read leniently it would mean 1970, and past year 9999 strftime fails.
    std::string e = epoch;
    bool digits =
        !e.empty() && e.size() <= 12 && std::all_of(e.begin(), e.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoll(e) > 253402300799LL)
      throw InputError("SOURCE_DATE_EPOCH='" + e +
                       "': expected whole seconds since 1970-01-01 UTC, at most 253402300799 "
                       "(year 9999)");
    t = static_cast<std::time_t>(std::stoll(e));
  }
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

size_t ResultsTable::rows() const
{
  auto it = numbers.find("index");
  return it == numbers.end() ? 0 : it->second.size();
}

void write_sweep_file(const std::string& path, const SweepSpec& sweep, const std::map<int64_t, SweepRow>& rows,
                      const SweepFileInfo& info)
{
  write_atomically(path, [&](const std::string& temp) {
    try {
      H5::Exception::dontPrint();
      write_hdf5_file(temp, [&](H5::H5File& f) {
        H5::Group root = f.openGroup("/");
        std::set<std::string> profiles;
        for (const auto& [i, row] : rows)
          for (const auto& [k, v] : row.texts)
            if (k == "gpu.hardware" || k == "host.hardware" || k == "nvme.hardware")
              profiles.insert(v);
        std::string hardware;
        for (const auto& p : profiles)
          hardware += (hardware.empty() ? "" : ", ") + p;
        stamp_format(root, "memwall-sweep");
        attribute(root, "sweep_file", sweep.file);
        attribute(root, "sweep_text", sweep.text);
        attribute(root, "base_spec_text", sweep.base_text);
        attribute(root, "hardware_profiles", hardware);
        attribute(root, "started_at", info.started_at);
        attribute(root, "finished_at", info.finished_at);
        attribute(root, "points_total", static_cast<double>(sweep.points.size()));
        attribute(root, "points_done", static_cast<double>(rows.size()));
        write_points(root, sweep, rows);
        if (sweep.record_memory || sweep.record_links) {
          H5::Group runs = root.createGroup("runs");
          for (const auto& [i, row] : rows) {
            if (!row.error.empty())
              continue;
            H5::Group g = runs.createGroup(run_group_name(i));
            if (sweep.record_memory)
              write_memory(g, row.pools);
            if (sweep.record_links)
              write_links(g, row.links);
          }
        }
      });
    } catch (const H5::Exception& e) {
      throw std::runtime_error(path + ": HDF5 write failed: " + e.getDetailMsg());
    }
  });
}

ResultsTable read_sweep_file(const std::string& path)
{
  if (memwall_file_format(path) != "memwall-sweep")
    throw InputError(path + ": a run file, not a sweep results file (memwall sweep writes those)");
  ResultsTable t;
  try {
    H5::H5File f(path, H5F_ACC_RDONLY);
    H5::Group root = f.openGroup("/");
    for (const char* a : {"memwall_version", "git_commit", "sweep_file", "sweep_text", "base_spec_text",
                          "hardware_profiles", "started_at", "finished_at"})
      t.attributes[a] = text_attribute(root, a).value_or("");
    t.points_total = number_attribute(root, "points_total").value_or(nan);
    H5::Group g    = root.openGroup("points");
    t.columns      = name_list(g, "columns", path);
    t.axes         = name_list(g, "axes", path);
    t.metrics      = name_list(g, "metrics", path);
    for (const std::string& c : t.columns) {
      if (is_text_column(g, c))
        t.texts[c] = read_texts(g, c);
      else
        t.numbers[c] = read_numbers(g, c);
    }
    check_table(path, t);
    // A point that failed has no results: its -1 and false (integer and flag columns)
    // read back as missing, like its NaN.
    std::set<std::string> own{"index"};
    own.insert(t.axes.begin(), t.axes.end());
    if (auto st = t.texts.find("status"); st != t.texts.end())
      for (auto& [c, v] : t.numbers)
        if (!own.count(c))
          for (size_t r = 0; r < v.size() && r < st->second.size(); ++r)
            if (st->second[r] == "error")
              v[r] = std::numeric_limits<double>::quiet_NaN();
  } catch (const H5::Exception& e) {
    throw InputError(path + ": unreadable memwall results file (" + e.getDetailMsg() + "); truncated or corrupt?");
  }
  return t;
}

std::map<int64_t, SweepRow> read_sweep_rows(const std::string& path, const SweepSpec& sweep, SweepFileInfo& info)
{
  ResultsTable t = read_sweep_file(path);
  if (t.attributes["sweep_text"] != sweep.text || t.attributes["base_spec_text"] != sweep.base_text)
    throw InputError(path + ": holds the results of another sweep spec (or its base spec changed); "
                            "resume only with the spec that started it, or write to a new file");
  info.started_at = t.attributes["started_at"];
  std::set<std::string> fixed{"index", "status", "error"};
  fixed.insert(t.axes.begin(), t.axes.end());
  std::map<int64_t, SweepRow> rows;
  const std::vector<double>& index = t.numbers["index"];
  try {
    H5::H5File f(path, H5F_ACC_RDONLY);
    for (size_t r = 0; r < index.size(); ++r) {
      SweepRow row;
      if (!(index[r] >= 0 && index[r] < static_cast<double>(sweep.points.size())) || index[r] != std::floor(index[r]))
        throw InputError(path + ": /points row " + std::to_string(r) + " has index " + format_g(index[r]) +
                         ", not one of the sweep's " + std::to_string(sweep.points.size()) +
                         " points; the file is corrupt");
      row.index = static_cast<int64_t>(index[r]);
      if (rows.count(row.index))
        throw InputError(path + ": /points holds point " + std::to_string(row.index) + " twice; the file is corrupt");
      row.error = t.texts["error"].at(r);
      for (const std::string& c : t.columns) {
        if (fixed.count(c))
          continue;
        if (auto n = t.numbers.find(c); n != t.numbers.end() && !std::isnan(n->second.at(r)))
          row.numbers.emplace_back(c, n->second[r]);
        if (auto x = t.texts.find(c); x != t.texts.end() && !x->second.at(r).empty())
          row.texts.emplace_back(c, x->second[r]);
      }
      if (row.error.empty() && (sweep.record_memory || sweep.record_links)) {
        H5::Group g = f.openGroup("/runs/" + run_group_name(row.index));
        if (sweep.record_memory)
          row.pools = read_memory(g);
        if (sweep.record_links)
          row.links = read_links(g);
      }
      rows.emplace(row.index, std::move(row));
    }
  } catch (const H5::Exception& e) {
    throw InputError(path + ": unreadable memwall results file (" + e.getDetailMsg() + ")");
  } catch (const std::out_of_range&) {
    throw InputError(path + ": the columns of /points differ in length; the file is corrupt");
  }
  return rows;
}

} // namespace memwall

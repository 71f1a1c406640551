#include "workloads/inference/requests/RequestTrace.hpp"

#include "base/InputError.hpp"
#include "base/JsonInput.hpp"
#include "base/TextFile.hpp"
#include "workloads/model/InputLimits.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace memwall {
namespace {

enum class Column { arrival, prompt, output, other };

std::string lower(std::string s)
{
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s)
{
  size_t b = s.find_first_not_of(" \t\r\"");
  size_t e = s.find_last_not_of(" \t\r\"");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Column column_of(const std::string& name)
{
  static const std::vector<std::pair<Column, std::vector<std::string>>> aliases{
      {Column::arrival, {"arrival_time", "arrival_s", "timestamp"}},
      {Column::prompt, {"prompt_tokens", "input_tokens", "contexttokens", "prompt_len", "input_length"}},
      {Column::output, {"output_tokens", "generatedtokens", "output_len", "output_length"}}};
  std::string n = lower(trim(name));
  for (const auto& [c, names] : aliases)
    if (std::find(names.begin(), names.end(), n) != names.end())
      return c;
  return Column::other;
}

const char* allowed_columns = "arrival_time|timestamp, prompt_tokens|ContextTokens, output_tokens|GeneratedTokens";

// Seconds since an arbitrary epoch: a plain number, or a "YYYY-MM-DD HH:MM:SS[.frac]" date.
bool parse_time(const std::string& text, double& out)
{
  std::string t = trim(text);
  char* end     = nullptr;
  out           = std::strtod(t.c_str(), &end);
  // Seconds (relative or since 1970) up to the year ~5000: at +-1.7e308 the replay's
  // clock overflowed.
  if (!t.empty() && end == t.c_str() + t.size())
    return std::isfinite(out) && std::fabs(out) <= 1e11;
  int y, mo, d, h, mi;
  double sec;
  char rest = 0;
  if (std::sscanf(t.c_str(), "%d-%d-%d %d:%d:%lf%c", &y, &mo, &d, &h, &mi, &sec, &rest) != 6)
    return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec >= 61)
    return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon  = mo - 1;
  tm.tm_mday = d;
  out        = static_cast<double>(timegm(&tm)) + h * 3600.0 + mi * 60.0 + sec;
  return std::fabs(out) <= 1e11; // as a number's: a date in the year 9999 is 2.5e11 s
}

constexpr double max_trace_span_s = 1e9;

[[noreturn]] void bad_row(const std::string& path, size_t row, const std::string& what)
{
  throw InputError(path + ":" + std::to_string(row) + ": " + what);
}

int64_t token_count(const std::string& path, size_t row, const std::string& column, const std::string& text)
{
  std::string t = trim(text);
  char* end     = nullptr;
  long long v   = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || end != t.c_str() + t.size())
    bad_row(path, row, column + " '" + t + "' is not an integer token count");
  if (v < 0)
    bad_row(path, row, column + " " + t + " is negative; token counts must be >= 0 (prompts >= 1, outputs >= 1)");
  // 9223372036854775807 overflowed prompt + output, passed the context check and never
  // ended.
  if (v > limits::tokens)
    bad_row(path, row, column + " " + t + " exceeds the limit of " + std::to_string(limits::tokens) + " tokens");
  return v;
}

Request finish_row(const std::string& path, size_t row, int64_t id, double arrival, int64_t prompt, int64_t output)
{
  if (prompt < 1)
    bad_row(path, row, "a request needs at least one prompt token");
  if (output < 1)
    bad_row(path, row, "a request needs at least one output token");
  return {id, arrival, prompt, output, static_cast<int64_t>(row)};
}

std::vector<Request> read_csv(const std::string& path, std::istream& in)
{
  std::string line;
  size_t row = 0;
  std::vector<Column> columns;
  while (columns.empty() && std::getline(in, line)) {
    ++row;
    if (trim(line).empty())
      continue;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');)
      columns.push_back(column_of(cell));
  }
  for (Column need : {Column::arrival, Column::prompt, Column::output})
    if (std::find(columns.begin(), columns.end(), need) == columns.end())
      throw InputError(path + ":1: header must name the columns " + std::string(allowed_columns));
  std::vector<Request> out;
  while (std::getline(in, line)) {
    ++row;
    if (trim(line).empty())
      continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');)
      cells.push_back(cell);
    if (!line.empty() && line.back() == ',')
      cells.emplace_back();
    if (cells.size() != columns.size())
      bad_row(path, row,
              "expected " + std::to_string(columns.size()) + " fields, found " + std::to_string(cells.size()));
    double arrival = 0;
    int64_t prompt = 0, output = 0;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (columns[i] == Column::arrival && !parse_time(cells[i], arrival))
        bad_row(path, row, "arrival '" + trim(cells[i]) + "' is neither seconds nor a YYYY-MM-DD HH:MM:SS time");
      if (columns[i] == Column::prompt)
        prompt = token_count(path, row, "prompt_tokens", cells[i]);
      if (columns[i] == Column::output)
        output = token_count(path, row, "output_tokens", cells[i]);
    }
    out.push_back(finish_row(path, row, static_cast<int64_t>(out.size()), arrival, prompt, output));
  }
  return out;
}

std::vector<Request> read_jsonl(const std::string& path, std::istream& in)
{
  std::vector<Request> out;
  std::string line;
  for (size_t row = 1; std::getline(in, line); ++row) {
    if (trim(line).empty())
      continue;
    nlohmann::json j;
    if (std::string why = parse_json_checked(line, j); !why.empty())
      bad_row(path, row, "not a JSON object (" + why + ")");
    if (!j.is_object())
      bad_row(path, row, "not a JSON object");
    bool have[3]   = {false, false, false};
    double arrival = 0;
    int64_t prompt = 0, output = 0;
    for (const auto& [key, value] : j.items()) {
      Column c = column_of(key);
      if (c == Column::other)
        continue;
      have[static_cast<int>(c)] = true;
      std::string text          = value.is_string() ? value.get<std::string>() : value.dump();
      if (c == Column::arrival && !parse_time(text, arrival))
        bad_row(path, row, key + " '" + text + "' is neither seconds nor a YYYY-MM-DD HH:MM:SS time");
      if (c == Column::prompt)
        prompt = token_count(path, row, key, text);
      if (c == Column::output)
        output = token_count(path, row, key, text);
    }
    if (!have[0] || !have[1] || !have[2])
      bad_row(path, row, "each line needs the keys " + std::string(allowed_columns));
    out.push_back(finish_row(path, row, static_cast<int64_t>(out.size()), arrival, prompt, output));
  }
  return out;
}

} // namespace

const char* reject_reason_name(RejectReason r)
{
  switch (r) {
    case RejectReason::none: return "none";
    case RejectReason::kv_cache: return "kv_cache";
    case RejectReason::prompt_too_long: return "prompt_too_long";
    case RejectReason::exceeds_context: return "exceeds_context";
  }
  return "none";
}

std::vector<Request> fixed_batch(int64_t batch, int64_t prompt_tokens, int64_t output_tokens)
{
  std::vector<Request> out;
  for (int64_t i = 0; i < batch; ++i)
    out.push_back({i, 0.0, prompt_tokens, output_tokens, 0});
  return out;
}

std::vector<Request> read_request_trace(const std::string& path)
{
  std::istringstream in(read_text_file(path, "trace file"));
  std::string ext = lower(std::filesystem::path(path).extension().string());
  std::vector<Request> out;
  if (ext == ".csv")
    out = read_csv(path, in);
  else if (ext == ".jsonl" || ext == ".json")
    out = read_jsonl(path, in);
  else
    throw InputError(path + ": unknown trace format '" + ext + "'; allowed: .csv (with a header row), .jsonl");
  if (out.empty())
    throw InputError(path + ": the trace holds no requests");
  if (out.size() > static_cast<size_t>(limits::requests))
    throw InputError(path + ": the trace holds " + std::to_string(out.size()) + " requests; at most " +
                     std::to_string(limits::requests) + " in one run");
  std::stable_sort(out.begin(), out.end(),
                   [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  double t0 = out.front().arrival_s;
  // The replay's clock runs to the last arrival: past 1e9 s (31 years) a double resolves
  // it no finer than 1e-7 s, and one far-off date quantised every latency (TPOT 3.3e-4 s
  // read 6.1e-5 or 0).
  if (out.back().arrival_s - t0 > max_trace_span_s) {
    char span[32];
    std::snprintf(span, sizeof span, "%.4g", out.back().arrival_s - t0);
    throw InputError(path + ":" + std::to_string(out.back().row) + ": arrives " + span +
                     " s after the first request (row " + std::to_string(out.front().row) +
                     "); a trace spans at most 1e9 s");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].arrival_s -= t0;
    out[i].id = static_cast<int64_t>(i);
  }
  return out;
}

} // namespace memwall

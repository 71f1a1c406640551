#include "calibration/Measurement.hpp"

#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"
#include "base/ParamReader.hpp"
#include "base/TextFile.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace memwall {
namespace {

double parse_number(const std::string& text, const std::string& where, bool integer)
{
  if (text.empty())
    return 0;
  size_t used = 0;
  double v    = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(v))
    throw InputError(where + ": '" + text + "' is not a number");
  if (v < 0)
    throw InputError(where + ": " + text + " is negative; sizes, counts and times are >= 0");
  if (integer && (v != std::floor(v) || v > 1e9))
    throw InputError(where + ": " + text + " is not a whole number below 1e9");
  return v;
}

std::string format(double v)
{
  if (v == 0)
    return "";
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

std::string quote(const std::string& s)
{
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

} // namespace

const std::vector<std::string>& measurement_columns()
{
  static const std::vector<std::string> c{"gpu",    "benchmark", "dtype",          "m",     "n",
                                          "k",      "ranks",     "ranks_per_node", "bytes", "flops",
                                          "time_s", "samples",   "source",         "layer", "pass"};
  return c;
}

const std::vector<std::string>& benchmark_names()
{
  static const std::vector<std::string> b = [] {
    std::vector<std::string> v{"gemm",           "gemm_burst", "gemm_sustained", "elementwise",
                               "h2d_pinned",     "d2h_pinned", "h2d_pageable",   "d2h_pageable",
                               "bidir_pinned",   "peer",       "all_reduce",     "all_gather",
                               "reduce_scatter", "send_recv",  "managed_fault",  "managed_prefetch"};
    for (KernelFamily f : fitted_kernel_families())
      v.push_back(elementwise_benchmark(f));
    return v;
  }();
  return b;
}

std::optional<KernelFamily> elementwise_family(const std::string& benchmark)
{
  if (benchmark == "elementwise")
    return KernelFamily::generic;
  for (KernelFamily f : fitted_kernel_families())
    if (benchmark == elementwise_benchmark(f))
      return f;
  return std::nullopt;
}

bool is_gemm(const std::string& b) { return b == "gemm" || is_sustained_gemm(b); }
bool is_sustained_gemm(const std::string& b) { return b == "gemm_burst" || b == "gemm_sustained"; }

bool is_collective(const std::string& b)
{
  return b == "all_reduce" || b == "all_gather" || b == "reduce_scatter" || b == "send_recv";
}

std::vector<std::string> split_csv_line(const std::string& line)
{
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  for (std::string& f : out) {
    size_t a = f.find_first_not_of(' '), b = f.find_last_not_of(' ');
    f = a == std::string::npos ? "" : f.substr(a, b - a + 1);
  }
  return out;
}

std::vector<Measurement> parse_measurements(const std::string& text, const std::string& file)
{
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line.find_first_not_of(" \r\t") == std::string::npos)
    throw InputError(file + ": empty file; a measurement CSV starts with the header " + join(measurement_columns()));
  std::vector<std::string> header = split_csv_line(line);
  const auto& known               = measurement_columns();
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) {
    if (std::find(known.begin(), known.end(), header[i]) == known.end())
      throw InputError(file + ":1: unknown column '" + header[i] + "'; allowed: " + join(known));
    if (col.count(header[i]))
      throw InputError(file + ":1: column '" + header[i] + "' appears twice");
    col[header[i]] = i;
  }
  for (const char* required : {"gpu", "benchmark", "time_s"})
    if (!col.count(required))
      throw InputError(file + ":1: missing column '" + std::string(required) + "'");
  std::vector<Measurement> rows;
  const auto& names = benchmark_names();
  for (int row = 2; std::getline(in, line); ++row) {
    if (line.find_first_not_of(" \r\t") == std::string::npos)
      continue;
    std::vector<std::string> f = split_csv_line(line);
    std::string where          = file + ":" + std::to_string(row);
    if (f.size() != header.size())
      throw InputError(where + ": " + std::to_string(f.size()) + " fields where the header has " +
                       std::to_string(header.size()));
    auto get = [&](const char* c) { return col.count(c) ? f[col.at(c)] : std::string(); };
    auto num = [&](const char* c, bool integer = false) {
      return parse_number(get(c), where + ": column " + c, integer);
    };
    Measurement m;
    m.gpu       = get("gpu");
    m.benchmark = get("benchmark");
    if (m.gpu.empty())
      throw InputError(where + ": column gpu is empty; give the catalog id (memwall list gpus)");
    if (std::find(names.begin(), names.end(), m.benchmark) == names.end())
      throw InputError(where + ": unknown benchmark '" + m.benchmark + "'; allowed: " + join(names));
    m.dtype          = get("dtype");
    m.m              = num("m", true);
    m.n              = num("n", true);
    m.k              = num("k", true);
    m.ranks          = static_cast<int>(num("ranks", true));
    m.ranks_per_node = static_cast<int>(num("ranks_per_node", true));
    m.bytes          = num("bytes");
    m.flops          = num("flops");
    m.time_s         = num("time_s");
    m.samples        = static_cast<int>(num("samples", true));
    m.source         = get("source");
    m.layer          = get("layer");
    m.pass           = get("pass");
    if (!m.pass.empty() && (m.benchmark != "gemm" || !measured_gemm_pass(m.pass)))
      throw InputError(where + ": column pass is '" + m.pass +
                       "'; a gemm row's pass is fwd, dgrad or wgrad (or empty)");
    // The ranges a spec's times and sizes have (Quantity.hpp): a row beyond them (an
    // import of a bandwidth of 1e-300, a time of 5e299 s) could only fit nonsense.
    if (!(m.time_s >= 1e-12 && m.time_s <= 1e4))
      throw InputError(where + ": column time_s must be seconds in [1e-12, 1e4], got " + format(m.time_s));
    if (!(m.bytes >= 0 && m.bytes <= 1e18))
      throw InputError(where + ": column bytes must lie in [0, 1e18], got " + format(m.bytes));
    if (is_gemm(m.benchmark) && (m.m <= 0 || m.n <= 0 || m.k <= 0 || m.dtype.empty()))
      throw InputError(where + ": a " + m.benchmark + " row needs dtype, m, n and k");
    if (is_sustained_gemm(m.benchmark) && m.flops <= 0)
      throw InputError(where + ": a " + m.benchmark + " row needs flops (its GEMMs' together)");
    if (is_collective(m.benchmark) && (m.ranks < 2 || m.ranks_per_node < 1 || m.bytes <= 0))
      throw InputError(where + ": a " + m.benchmark + " row needs ranks >= 2, ranks_per_node >= 1 and bytes > 0");
    rows.push_back(m);
  }
  if (rows.empty())
    throw InputError(file + ": no measurements after the header");
  return rows;
}

std::vector<Measurement> read_measurements(const std::string& path)
{
  return parse_measurements(read_text_file(path, "measurement CSV"), path);
}

std::string measurements_csv(const std::vector<Measurement>& rows)
{
  std::ostringstream body;
  body << join(measurement_columns(), ",") << '\n';
  for (const Measurement& m : rows)
    body << quote(m.gpu) << ',' << m.benchmark << ',' << m.dtype << ',' << format(m.m) << ',' << format(m.n) << ','
         << format(m.k) << ',' << format(m.ranks) << ',' << format(m.ranks_per_node) << ',' << format(m.bytes) << ','
         << format(m.flops) << ',' << format(m.time_s) << ',' << format(m.samples) << ',' << quote(m.source) << ','
         << quote(m.layer) << ',' << m.pass << '\n';
  return body.str();
}

void write_measurements(const std::string& path, const std::vector<Measurement>& rows)
{
  write_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary);
    out << measurements_csv(rows);
    out.close();
    if (!out)
      throw std::runtime_error(path + ": could not write the measurement CSV");
  });
}

} // namespace memwall

#include "base/NumberFormat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace memwall {
namespace {

std::string with_separators(long long n)
{
  std::string digits = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<size_t>(i), ",");
  return (n < 0 ? "-" : "") + digits;
}

} // namespace

std::string format_count(double v)
{
  if (!std::isfinite(v) || std::fabs(v) >= 9e18)
    return format_number(v);
  return with_separators(std::llround(v));
}

std::string format_number(double v)
{
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e6)
    return std::to_string(static_cast<long long>(v)); // no separator: "[0, 1000]" stays unambiguous
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  std::string s = buf;
  // "1e+15" -> "1e15", "1e-06" -> "1e-6"
  size_t e = s.find('e');
  if (e != std::string::npos) {
    std::string mant = s.substr(0, e), exp = s.substr(e + 1);
    bool neg = !exp.empty() && exp[0] == '-';
    if (!exp.empty() && (exp[0] == '+' || exp[0] == '-'))
      exp.erase(0, 1);
    exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
    s = mant + "e" + (neg ? "-" : "") + exp;
  }
  return s;
}

std::string format_exact(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string format_usd(double v) { return "$" + format_count(v); }

std::string format_usd_cents(double v)
{
  if (std::fabs(v) >= 1000)
    return format_usd(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.2f", v);
  return buf;
}

std::string format_params(double v)
{
  static const std::pair<double, const char*> steps[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, suffix] : steps)
    if (std::fabs(v) >= scale) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g%s", v / scale, suffix);
      return buf;
    }
  return format_count(v);
}

std::string format_bytes(double v)
{
  static const std::pair<double, const char*> steps[] = {{1125899906842624.0, "PiB"},
                                                         {1099511627776.0, "TiB"},
                                                         {1073741824.0, "GiB"},
                                                         {1048576.0, "MiB"},
                                                         {1024.0, "KiB"}};
  char buf[32];
  for (const auto& [scale, unit] : steps)
    if (std::fabs(v) >= scale) {
      std::snprintf(buf, sizeof buf, "%.2f %s", v / scale, unit);
      return buf;
    }
  std::snprintf(buf, sizeof buf, "%.0f B", v);
  return buf;
}

std::vector<std::string> format_durations(const std::vector<double>& seconds)
{
  double most = 0;
  for (double s : seconds)
    most = std::max(most, std::fabs(s));
  double scale     = most < 1e-3 ? 1e6 : most < 1 ? 1e3 : most < 3600 ? 1 : 1.0 / 3600;
  const char* unit = most < 1e-3 ? "us" : most < 1 ? "ms" : most < 3600 ? "s" : "h";
  // Two decimals below 100 of the unit, one above, as format_duration reads.
  std::vector<std::string> out;
  for (double s : seconds) {
    char buf[48];
    double x = s * scale;
    std::snprintf(buf, sizeof buf, most * scale >= 100 ? "%.1f %s" : "%.2f %s", x, unit);
    out.emplace_back(buf);
  }
  return out;
}

} // namespace memwall

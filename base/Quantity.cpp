#include "base/Quantity.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace memwall {
namespace {

std::string trim(const std::string& s)
{
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

// Multiplier of a prefix such as "G" or "Gi"; nullopt when unknown.
std::optional<double> prefix_scale(const std::string& p)
{
  static const std::array<std::pair<const char*, double>, 11> table{{{"", 1.0},
                                                                     {"k", 1e3},
                                                                     {"K", 1e3},
                                                                     {"M", 1e6},
                                                                     {"G", 1e9},
                                                                     {"T", 1e12},
                                                                     {"P", 1e15},
                                                                     {"Ki", 1024.0},
                                                                     {"Mi", 1048576.0},
                                                                     {"Gi", 1073741824.0},
                                                                     {"Ti", 1099511627776.0}}};
  for (const auto& [name, scale] : table)
    if (p == name)
      return scale;
  return std::nullopt;
}

bool ends_with(const std::string& s, const std::string& suffix)
{
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::optional<double> unit_scale(const std::string& unit, QuantityKind kind)
{
  if (unit.empty())
    return 1.0;
  struct Base {
    const char* suffix;
    double scale;
  };
  std::array<Base, 4> bases{};
  size_t n = 0;
  switch (kind) {
    case QuantityKind::bytes: bases[n++] = {"B", 1.0}; break;
    case QuantityKind::rate:
      bases[n++] = {"B/s", 1.0};
      bases[n++] = {"b/s", 0.125}; // network rates are quoted in bits
      break;
    case QuantityKind::flop_rate:
      bases[n++] = {"FLOP/s", 1.0};
      bases[n++] = {"FLOPS", 1.0};
      bases[n++] = {"OPS", 1.0};
      break;
    case QuantityKind::seconds:
      if (unit == "s")
        return 1.0;
      if (unit == "ms")
        return 1e-3;
      if (unit == "us")
        return 1e-6;
      if (unit == "ns")
        return 1e-9;
      return std::nullopt;
    case QuantityKind::plain: return std::nullopt;
  }
  for (size_t i = 0; i < n; ++i) {
    if (ends_with(unit, bases[i].suffix)) {
      auto p = prefix_scale(unit.substr(0, unit.size() - std::string(bases[i].suffix).size()));
      if (p)
        return *p * bases[i].scale;
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<double> parse_quantity(const std::string& raw, QuantityKind kind)
{
  std::string text = trim(raw);
  if (text.empty())
    return std::nullopt;
  const char* begin = text.c_str();
  char* end         = nullptr;
  double value      = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value))
    return std::nullopt;
  std::string unit = trim(std::string(end));
  auto scale       = unit_scale(unit, kind);
  if (!scale)
    return std::nullopt;
  return value * *scale;
}

QuantityLimits quantity_limits(QuantityKind kind)
{
  switch (kind) {
    case QuantityKind::bytes: return {1, 1e18, "B"};            // 1 byte .. 1 EB
    case QuantityKind::rate: return {1e3, 1e18, "B/s"};         // 1 kB/s .. 1 EB/s (a fit's flat regime)
    case QuantityKind::flop_rate: return {1e6, 1e19, "FLOP/s"}; // 1 MFLOP/s .. 10 EFLOP/s
    case QuantityKind::seconds: return {1e-12, 1e4, "s"};       // 1 ps .. 2.8 hours
    case QuantityKind::plain: return {0, 1e15, ""};
  }
  return {0, 1e15, ""};
}

std::string format_duration(double s)
{
  char buf[64];
  double a = std::fabs(s);
  if (s == 0)
    return "0 s"; // nothing spent: no unit to pick
  if (a < 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (a < 1)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else if (a < 3600)
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  return buf;
}

std::string format_gib(double bytes)
{
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  return buf;
}

std::string format_si(double value, const std::string& unit)
{
  static const std::array<std::pair<double, const char*>, 6> steps{
      {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
  for (const auto& [scale, prefix] : steps) {
    if (std::fabs(value) >= scale) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g %s%s", value / scale, prefix, unit.c_str());
      return buf;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s", value, unit.c_str());
  return buf;
}

} // namespace memwall

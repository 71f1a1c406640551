#include "app/optimize/LayoutAxis.hpp"

#include "base/InputError.hpp"

#include <algorithm>
#include <charconv>

namespace memwall {

Registry<LayoutAxisFactory>& layout_axis_registry()
{
  static Registry<LayoutAxisFactory> registry("layout axis", "optimize --axis", "layout-axes");
  return registry;
}

std::vector<NamedAxis> layout_axes_in_order()
{
  std::vector<NamedAxis> out;
  for (const auto& [name, entry] : layout_axis_registry().entries())
    out.push_back({name, entry.description, entry.make()});
  std::stable_sort(out.begin(), out.end(),
                   [](const NamedAxis& a, const NamedAxis& b) { return a.axis->order() < b.axis->order(); });
  return out;
}

std::vector<int64_t> divisors(int64_t n)
{
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d)
        high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

std::vector<int64_t> lighter_end_stage(int64_t layers, int64_t stages)
{
  std::vector<int64_t> out;
  if (stages < 1 || layers < stages)
    return out;
  if (layers % stages == 0)
    out.push_back(0);
  if (stages < 2)
    return out;
  for (int64_t k = (layers - 1) / stages; k >= 1; --k) // below the even share, most first
    if ((layers - k) % (stages - 1) == 0 && (layers - k) / (stages - 1) > k) {
      out.push_back(k);
      break;
    }
  return out;
}

void IntegerAxis::apply(PartialLayout& l, const std::string& value) const
{
  l.t.*field_ = axis_integer(key_, value);
  l.settings.emplace_back(key_, value);
}

int64_t axis_integer(const std::string& key, const std::string& value)
{
  int64_t v   = 0;
  auto [p, e] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (e != std::errc() || p != value.data() + value.size() || v < 1 || v > 1'000'000'000)
    throw InputError("--axis " + key + ": '" + value + "' is not a whole number from 1 to 1e9");
  return v;
}

bool axis_flag(const std::string& key, const std::string& value)
{
  if (value == "true" || value == "false")
    return value == "true";
  throw InputError("--axis " + key + ": '" + value + "' is not true or false");
}

} // namespace memwall

#include "app/optimize/LayoutSpace.hpp"

#include "base/InputError.hpp"

namespace memwall {

AxisValues parse_axis_options(const std::vector<std::string>& options)
{
  std::vector<NamedAxis> axes = layout_axes_in_order();
  AxisValues out;
  for (const std::string& o : options) {
    size_t eq         = o.find('=');
    std::string named = o.substr(0, eq);
    // By its spec key or by its name in `memwall list layout-axes`.
    auto axis = std::find_if(axes.begin(), axes.end(),
                             [&](const NamedAxis& a) { return a.axis->key() == named || a.name == named; });
    if (eq == std::string::npos || axis == axes.end()) {
      std::string keys;
      for (const NamedAxis& a : axes)
        keys += (keys.empty() ? "" : ", ") + a.axis->key();
      throw InputError("--axis '" + o + "': expected KEY=V1,V2,... with KEY one of " + keys +
                       " (or its name in `memwall list layout-axes`)");
    }
    std::string key = axis->axis->key();
    if (out.count(key))
      throw InputError("--axis " + key + " is given twice");
    std::vector<std::string> values;
    std::string rest = o.substr(eq + 1);
    for (size_t start = 0;;) {
      size_t comma  = rest.find(',', start);
      std::string v = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (v.empty())
        throw InputError("--axis " + key + ": an empty value in '" + rest + "'");
      PartialLayout probe;
      axis->axis->apply(probe, v); // InputError for a value the key does not take
      if (std::find(values.begin(), values.end(), v) != values.end())
        throw InputError("--axis " + key + ": " + v + " twice in '" + rest + "'");
      values.push_back(v);
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
    out[key] = std::move(values);
  }
  return out;
}

std::vector<std::string> searched_keys(const SearchSpace& space)
{
  std::vector<std::string> keys;
  for (const NamedAxis& a : layout_axes_in_order())
    if (a.axis->applies(space))
      keys.push_back(a.axis->key());
  return keys;
}

std::vector<PartialLayout> enumerate_layouts(const SearchSpace& space, const AxisValues& given, size_t limit)
{
  PartialLayout start;
  start.t = space.job.training;
  std::vector<PartialLayout> layouts{start};
  for (const NamedAxis& a : layout_axes_in_order()) {
    if (!a.axis->applies(space))
      continue;
    auto user = given.find(a.axis->key());
    std::vector<PartialLayout> next;
    for (const PartialLayout& l : layouts)
      for (const std::string& v : user != given.end() ? user->second : a.axis->values(l, space)) {
        PartialLayout n = l;
        a.axis->apply(n, v);
        next.push_back(std::move(n));
      }
    layouts = std::move(next);
    if (layouts.size() > limit)
      throw InputError("optimize: the search has more than " + std::to_string(max_layouts) +
                       " layouts over its GPU counts (on " + std::to_string(space.gpus) + " GPUs, at " + a.axis->key() +
                       "); narrow it with --axis KEY=V1,V2 (memwall list layout-axes) or fewer counts");
  }
  return layouts;
}

} // namespace memwall

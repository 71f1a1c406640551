#include "app/sweep/SweepSpec.hpp"

#include "base/InputError.hpp"
#include "base/ParamReader.hpp"
#include "base/TextFile.hpp"
#include "base/YamlDocument.hpp"
#include "sim/spec/SpecParams.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace memwall {
namespace {

std::string flow_text(const YAML::Node& n)
{
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

std::string line_of(const YAML::Node& n) { return std::to_string(n.Mark().line + 1); }

struct Axis {
  std::string key;
  std::vector<YAML::Node> values;
};

// The axes of one mapping (`grid`, or one `zip` group), checked.
std::vector<Axis> read_axes(const YAML::Node& map, const std::string& file, const std::string& where)
{
  if (!map.IsMap())
    throw InputError(file + ":" + line_of(map) + ": " + where + ": expected a mapping of spec keys to value lists");
  if (map.size() == 0)
    throw InputError(file + ":" + line_of(map) + ": " + where + ": no axes; give at least one spec key and its values");
  std::vector<Axis> axes;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      throw InputError(file + ":" + line_of(kv.first) + ": " + where +
                       ": an axis key must be a spec key such as training.micro_batch");
    std::string key = kv.first.Scalar();
    std::string at  = file + ":" + line_of(kv.first) + ": " + where + "." + key;
    if (!is_spec_key(key))
      throw InputError(at +
                       ": unknown axis key; axes are spec keys such as training.micro_batch (see memwall list params)");
    if (!kv.second.IsSequence())
      throw InputError(at + ": expected a list of values, e.g. [1, 2, 4]");
    if (kv.second.size() == 0)
      throw InputError(at + ": empty axis; give at least one value");
    Axis a{key, {}};
    for (const auto& v : kv.second)
      a.values.push_back(v);
    axes.push_back(std::move(a));
  }
  return axes;
}

} // namespace

ExprValue setting_value(const SweepSetting& s)
{
  if (s.value.IsScalar()) {
    const std::string& t = s.value.Scalar();
    if (t == "true" || t == "false")
      return t == "true" ? 1.0 : 0.0;
    char* end = nullptr;
    double d  = std::strtod(t.c_str(), &end);
    if (!t.empty() && end == t.c_str() + t.size())
      return d;
    return t;
  }
  return s.text;
}

bool is_key_tail(const std::string& key, const std::string& name)
{
  return key.size() > name.size() && key.compare(key.size() - name.size(), name.size(), name) == 0 &&
         key[key.size() - name.size() - 1] == '.';
}

std::optional<ExprValue> setting_lookup(const SweepPoint& p, const std::string& name)
{
  const SweepSetting* found = nullptr;
  for (const SweepSetting& st : p.settings) {
    if (st.key == name)
      return setting_value(st);
    if (is_key_tail(st.key, name)) {
      if (found)
        return std::nullopt; // ambiguous short name
      found = &st;
    }
  }
  if (found)
    return setting_value(*found);
  return std::nullopt;
}

SweepSpec load_sweep(const std::string& path)
{
  return parse_sweep(read_text_file(path, "sweep spec"), path, std::filesystem::path(path).parent_path().string());
}

SweepSpec parse_sweep(const std::string& yaml_text, const std::string& file, const std::string& dir)
{
  YAML::Node root = parse_yaml(yaml_text, file);
  if (!root.IsMap())
    throw InputError(file +
                     ": a sweep spec is a mapping with base (or spec), grid and/or zip, filter, metrics, record");
  SweepSpec s;
  s.file = file;
  s.text = yaml_text;
  ParamReader top(root, file, "");
  std::string base       = top.text("base", "", "experiment spec the points start from, relative to the sweep spec");
  YAML::Node inline_spec = top.take("spec", "mapping", "the experiment spec inline (instead of base)", "none");
  YAML::Node grid        = top.take("grid", "mapping", "axes whose values combine as a cartesian product", "none");
  YAML::Node zip         = top.take("zip", "mapping or list of mappings", "axes that vary together", "none");
  std::string filter = top.text("filter", "", "expression over the axes; combinations where it is false are dropped");
  YAML::Node metrics =
      top.take("metrics", "mapping", "derived columns: name -> expression over axes and results", "none");
  ParamReader record = top.section("record", "per-point detail in the results file", "empty");
  s.record_memory    = record.flag("memory", false, "memory timeline of every device per point");
  s.record_links     = record.flag("links", false, "link statistics per point");
  record.finish();
  top.finish();

  if (base.empty() == !inline_spec.IsDefined())
    throw InputError(file + ": give exactly one of base (an experiment spec file) or spec (inline)");
  if (!base.empty()) {
    std::filesystem::path p = std::filesystem::path(dir) / base;
    try { // a FIFO, a directory or a missing file, each by name
      s.base_text = read_text_file(p.string(), "base spec");
    } catch (const InputError& e) {
      throw InputError(top.location("base") + ": " + e.what());
    }
    s.base_file = p.string();
    s.base_dir  = p.parent_path().string();
  } else {
    s.base_file = file + " (spec)";
    s.base_text = YAML::Dump(inline_spec) + "\n";
    s.base_dir  = dir;
  }

  // Grid axes, then zip groups; each group a list of settings.
  std::vector<std::vector<std::vector<SweepSetting>>> groups;
  if (grid.IsDefined())
    for (Axis& a : read_axes(grid, file, "grid")) {
      s.axes.push_back(a.key);
      std::vector<std::vector<SweepSetting>> choices;
      for (const auto& v : a.values)
        choices.push_back({{a.key, v, flow_text(v)}});
      groups.push_back(std::move(choices));
    }
  if (zip.IsDefined()) {
    std::vector<YAML::Node> zips;
    if (zip.IsSequence())
      for (const auto& z : zip)
        zips.push_back(z);
    else
      zips.push_back(zip);
    for (size_t g = 0; g < zips.size(); ++g) {
      std::string where      = zip.IsSequence() ? "zip[" + std::to_string(g) + "]" : "zip";
      std::vector<Axis> axes = read_axes(zips[g], file, where);
      for (const Axis& a : axes) {
        if (a.values.size() != axes.front().values.size())
          throw InputError(file + ": " + where + "." + a.key + ": has " + std::to_string(a.values.size()) +
                           " values but " + axes.front().key + " has " + std::to_string(axes.front().values.size()) +
                           "; zipped axes vary together and need equal lengths");
        s.axes.push_back(a.key);
      }
      std::vector<std::vector<SweepSetting>> choices(axes.empty() ? 0 : axes.front().values.size());
      for (const Axis& a : axes)
        for (size_t i = 0; i < a.values.size(); ++i)
          choices[i].push_back({a.key, a.values[i], flow_text(a.values[i])});
      groups.push_back(std::move(choices));
    }
  }
  for (size_t i = 0; i < s.axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (s.axes[i] == s.axes[j])
        throw InputError(file + ": axis " + s.axes[i] + " is given twice");

  std::optional<Expression> keep;
  if (!filter.empty())
    keep.emplace(filter, top.location("filter"));
  if (metrics.IsDefined()) {
    if (!metrics.IsMap())
      throw InputError(top.location("metrics") + ": expected a mapping of column names to expressions");
    for (const auto& kv : metrics) {
      std::string at = file + ":" + line_of(kv.first) + ": metrics";
      if (!kv.first.IsScalar())
        throw InputError(at + ": a metric's name must be a word such as step_ms");
      std::string name = kv.first.Scalar();
      if (!kv.second.IsScalar() || kv.second.Scalar().empty())
        throw InputError(at + "." + name + ": expected an expression over axes and results, e.g. step_time_s * 1000");
      s.metrics.emplace_back(name, Expression(kv.second.Scalar(), at + "." + name));
    }
  }

  // A 10^8-point --dry-run never ended: the product is bounded before it is walked.
  const double most_points = 1e6;
  double combinations      = 1;
  for (const auto& g : groups)
    combinations *= static_cast<double>(g.size());
  if (combinations > most_points)
    throw InputError(file + ": the axes combine into " + std::to_string(static_cast<long long>(combinations)) +
                     " points; the limit is 1000000 (split the sweep, or zip axes that vary together)");

  // Enumerate the product, last group fastest.
  std::vector<size_t> at(groups.size(), 0);
  for (bool more = true; more;) {
    SweepPoint p;
    for (size_t g = 0; g < groups.size(); ++g)
      for (const SweepSetting& st : groups[g][at[g]])
        p.settings.push_back(st);
    auto lookup = [&p](const std::string& name) { return setting_lookup(p, name); };
    if (!keep || keep->test(lookup)) {
      p.index = static_cast<int64_t>(s.points.size());
      s.points.push_back(std::move(p));
    }
    more = false;
    for (size_t g = groups.size(); g-- > 0;) {
      if (++at[g] < groups[g].size()) {
        more = true;
        break;
      }
      at[g] = 0;
    }
  }
  if (s.points.empty())
    throw InputError(file + ": the filter drops every combination; nothing to run");
  return s;
}

ExperimentSpec point_spec(const SweepSpec& sweep, const SweepPoint& point)
{
  std::vector<std::string> overrides;
  for (const SweepSetting& st : point.settings)
    overrides.push_back(st.key + "=" + st.text);
  return parse_spec(sweep.base_text, sweep.base_file, sweep.base_dir, overrides);
}

} // namespace memwall

#include "app/optimize/LayoutSearch.hpp"

#include "app/optimize/MemoryFloor.hpp"
#include "base/InputError.hpp"
#include "base/NumberFormat.hpp"
#include "base/TextFile.hpp"
#include "base/YamlDocument.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>
#include <map>

namespace memwall {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// The hardware settings that give the spec's node `gpus` GPUs (whole nodes, or part of
// one) and the GPUs used per node.
std::pair<Settings, int64_t> hardware_for(const ExperimentSpec& base, int64_t gpus)
{
  const int64_t per_node = base.cluster.node.gpus;
  if (gpus % per_node == 0)
    return {{{"hardware.nodes", std::to_string(gpus / per_node)}, {"hardware.gpus_per_node", std::to_string(per_node)}},
            per_node};
  if (gpus < per_node && per_node % gpus == 0)
    return {{{"hardware.nodes", "1"}, {"hardware.gpus_per_node", std::to_string(gpus)}}, gpus};
  throw InputError("--gpus " + std::to_string(gpus) + ": neither whole " + base.cluster.node.id + " nodes (" +
                   std::to_string(per_node) + " GPUs each) nor a divisor of one node's GPUs");
}

std::vector<std::string> as_overrides(const Settings& s)
{
  std::vector<std::string> out;
  for (const auto& [k, v] : s)
    out.push_back(k + "=" + v);
  return out;
}

// The spec key an error names ("training.pp"), for counting why layouts are invalid.
std::string refused_key(const std::string& message)
{
  for (const char* section : {"training.", "hardware.", "model."}) {
    size_t at = message.find(section);
    if (at == std::string::npos)
      continue;
    size_t end = at;
    while (end < message.size() &&
           (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '_' || message[end] == '.'))
      ++end;
    while (end > at && message[end - 1] == '.')
      --end;
    return message.substr(at, end - at);
  }
  return "other";
}

std::string sweep_text(const SearchPlan& plan, const ExperimentSpec& base, const std::vector<Settings>& points,
                       const OptimizeRequest& request)
{
  YAML::Node root;
  root["spec"] = YAML::Load(base.text);
  YAML::Node zip;
  for (size_t k = 0; k < points.front().size(); ++k) {
    YAML::Node column(YAML::NodeType::Sequence);
    for (const Settings& p : points)
      column.push_back(YAML::Load(p[k].second));
    column.SetStyle(YAML::EmitterStyle::Flow);
    zip[points.front()[k].first] = column;
  }
  root["zip"] = zip;
  // Dollars per step: the hardware's price spread over its years of service, and the
  // energy the step draws (the run's power x PUE at the spec's price of electricity).
  const double service_s = request.amortization_years * 365.25 * 86400;
  YAML::Node metrics;
  metrics["usd_per_step"]   = "step_time_s * hardware_cost_usd / " + format_exact(service_s) + " + energy.usd_per_step";
  metrics["tokens_per_usd"] = "tokens_per_s * step_time_s / usd_per_step";
  if (request.tokens > 0) {
    metrics["days_to_train"] = format_exact(request.tokens) + " / tokens_per_s / 86400";
    metrics["usd_to_train"]  = format_exact(request.tokens) + " / tokens_per_usd";
  }
  root["metrics"] = metrics;
  root["record"]  = YAML::Load("{memory: false, links: false}");
  YAML::Emitter out;
  out << root;
  return "# memwall optimize " + plan.spec_file + ": " + std::to_string(points.size()) +
         " layouts to replay (generated; `memwall sweep` runs it as it is)\n" + out.c_str() + "\n";
}

// A spec's text without its layout keys (the search sets every one of them).
std::string without_layout(const std::string& text, const std::string& file)
{
  YAML::Node doc = parse_yaml(text, file);
  if (doc.IsMap() && doc["training"].IsMap())
    for (const char* key : {"tp", "pp", "dp", "cp", "ep", "etp", "micro_batch", "pipeline_schedule", "virtual_stages",
                            "sp", "first_stage_layers", "last_stage_layers"})
      doc["training"].remove(key);
  return YAML::Dump(doc) + "\n";
}

// The spec; when its own layout does not suit its own hardware and --gpus replaces the
// hardware anyway, the spec without its layout keys, and no own layout to weigh against.
ExperimentSpec load_job(const OptimizeRequest& request, bool& own_layout)
{
  try {
    return load_spec(request.spec_path, request.overrides);
  } catch (const InputError&) {
    if (request.gpu_counts.empty())
      throw;
    std::string text = without_layout(read_text_file(request.spec_path, "spec"), request.spec_path);
    try {
      ExperimentSpec job = parse_spec(
          text, request.spec_path, std::filesystem::path(request.spec_path).parent_path().string(), request.overrides);
      own_layout = false;
      return job;
    } catch (const InputError&) {
    }
    throw;
  }
}

} // namespace

std::vector<int64_t> gpu_range(const std::string& text)
{
  auto bad = [&] {
    return InputError("--gpus-range '" + text + "': expected A:B, whole numbers 1 <= A <= B <= 1e6 (A, 2A, 4A ... B)");
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos)
    throw bad();
  int64_t a = 0, b = 0;
  auto number = [&](const std::string& s, int64_t& v) {
    auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), v);
    return e == std::errc() && p == s.data() + s.size() && v >= 1 && v <= 1'000'000;
  };
  if (!number(text.substr(0, colon), a) || !number(text.substr(colon + 1), b) || a > b)
    throw bad();
  std::vector<int64_t> out;
  for (int64_t g = a; g <= b; g *= 2)
    out.push_back(g);
  return out;
}

SearchPlan plan_search(const OptimizeRequest& request)
{
  SearchPlan plan;
  plan.spec_file            = request.spec_path;
  bool own_layout           = true;
  const ExperimentSpec base = load_job(request, own_layout);
  if (base.serving || !base.traces.empty())
    throw InputError(request.spec_path + ": optimize searches the layouts of a training step (a `training` "
                                         "section); for serving use serve-capacity");
  const std::string dir   = std::filesystem::path(request.spec_path).parent_path().string();
  const bool hardware_set = !request.gpu_counts.empty();
  plan.gpus               = hardware_set ? request.gpu_counts : std::vector<int64_t>{base.cluster.total_gpus()};
  plan.spec_values        = {{"hardware.nodes", std::to_string(base.cluster.nodes)},
                             {"hardware.gpus_per_node", std::to_string(base.cluster.gpus_per_node)}};
  for (const NamedAxis& a : layout_axes_in_order())
    plan.spec_values[a.axis->key()] = a.axis->value_of(base.training);

  // Every count's layouts first (cheap), so that a search too large for its plan is
  // refused before any candidate is parsed. The axes read the job (model, batch, stack)
  // and the GPUs' shape; each candidate's own spec, parsed below, is what gets judged.
  // (The spec at these GPUs with some fixed layout need not be valid: 1,536 sequences do
  // not split over dp = 1,024.)
  std::vector<Settings> hardware;
  std::vector<SearchSpace> spaces;
  std::vector<std::vector<PartialLayout>> layouts;
  size_t total = 0;
  for (int64_t gpus : plan.gpus) {
    auto [settings, per_node] =
        hardware_set ? hardware_for(base, gpus) : std::pair<Settings, int64_t>{{}, base.cluster.gpus_per_node};
    hardware.push_back(std::move(settings));
    spaces.push_back(SearchSpace{base, gpus, per_node});
    layouts.push_back(enumerate_layouts(spaces.back(), request.axes, max_layouts - total));
    total += layouts.back().size();
  }
  std::vector<Settings> points;
  std::map<Settings, int64_t> seen; // a layout's point index
  for (size_t c = 0; c < plan.gpus.size(); ++c) {
    // The point index of a layout to replay, or -1 (invalid, or cannot fit).
    auto consider = [&](const Settings& layout, bool count) -> int64_t {
      Settings s = hardware[c];
      s.insert(s.end(), layout.begin(), layout.end());
      if (auto it = seen.find(s); it != seen.end())
        return it->second;
      try {
        ExperimentSpec spec = parse_spec(base.text, base.file, dir, as_overrides(s));
        if (model_state_floor_bytes(spec) > spec.cluster.node.gpu.memory_bytes) {
          plan.cannot_fit += count;
          return -1;
        }
      } catch (const InputError& e) {
        plan.invalid += count;
        if (count)
          plan.invalid_by_key[refused_key(e.what())]++;
        return -1;
      }
      int64_t index = static_cast<int64_t>(points.size());
      seen.emplace(s, index);
      points.push_back(std::move(s));
      return index;
    };
    for (const PartialLayout& l : layouts[c]) {
      ++plan.enumerated;
      consider(l.settings, true);
    }
    // The spec's own layout is replayed too, as the search's reference, even where the
    // axes would not propose it (a GPipe schedule, tp across nodes).
    // At another count, the same layout with dp scaled to it (where tp x pp x cp divides
    // the count and the batch still splits): how the user's own layout would do there.
    if (own_layout) {
      bool same       = plan.gpus[c] == base.cluster.total_gpus();
      int64_t replica = static_cast<int64_t>(base.training.tp) * base.training.pp * base.training.cp;
      bool scales     = plan.gpus[c] % replica == 0;
      Settings own;
      for (const std::string& key : searched_keys(spaces[c]))
        own.emplace_back(key, key == "training.dp" && !same ? std::to_string(plan.gpus[c] / replica)
                                                            : plan.spec_values.at(key));
      int64_t index = same || scales ? consider(own, false) : -1;
      if (index >= 0)
        plan.own_by_gpus[plan.gpus[c]] = index;
      if (same)
        plan.own_index = index;
    }
  }
  if (points.empty())
    return plan;
  plan.sweep_yaml = sweep_text(plan, base, points, request);
  plan.sweep      = parse_sweep(plan.sweep_yaml, request.spec_path + " (memwall optimize)", dir);
  return plan;
}

} // namespace memwall

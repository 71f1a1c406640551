#include "app/sweep/SweepRow.hpp"

#include "analysis/StepReport.hpp"

#include <nlohmann/json.hpp>

#include "base/InputError.hpp"
#include "base/JsonOutput.hpp"
#include "base/ParamReader.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

namespace memwall {
namespace {

using Json = nlohmann::ordered_json;

// `kinds`, when given, learns which numbers are whole (JSON integers) and which flags.
void flatten(const Json& j, const std::string& prefix, SweepRow& row, std::map<std::string, ColumnKind>* kinds)
{
  for (const auto& [k, v] : j.items()) {
    std::string key = prefix.empty() ? k : prefix + "." + k;
    if (kinds && (v.is_boolean() || v.is_number_integer()))
      (*kinds)[key] = v.is_boolean() ? ColumnKind::flag : ColumnKind::whole;
    if (v.is_object())
      flatten(v, key, row, kinds);
    else if (v.is_boolean())
      row.numbers.emplace_back(key, v.get<bool>() ? 1.0 : 0.0);
    else if (v.is_number())
      row.numbers.emplace_back(key, v.get<double>());
    else if (v.is_string())
      row.texts.emplace_back(key, v.get<std::string>());
    else if (v.is_null()) // a time of a run that did not fit: the column stays numeric
      row.numbers.emplace_back(key, std::numeric_limits<double>::quiet_NaN());
  }
}

// The result columns of a run, before derived metrics.
SweepRow result_row(const RunResult& r, const ExperimentSpec& spec, std::map<std::string, ColumnKind>* kinds = nullptr)
{
  Json j = report_json(r);
  SweepRow row;
  for (const auto& [k, v] : j.items())
    if (k != "devices" && k != "links" && k != "did_not_fit") {
      Json one;
      one[k] = v;
      flatten(one, "", row, kinds);
    }
  for (const char* kind : {"gpu", "host", "nvme"}) {
    const Json* d = fullest_device(j["devices"], kind);
    if (!d)
      continue;
    std::string p = kind;
    row.texts.emplace_back(p + ".name", (*d)["name"].get<std::string>());
    row.texts.emplace_back(p + ".hardware", (*d)["hardware"].get<std::string>());
    row.numbers.emplace_back(p + ".capacity_bytes", (*d)["capacity_bytes"].get<double>());
    row.numbers.emplace_back(p + ".peak_bytes", (*d)["peak_bytes"].get<double>());
    row.numbers.emplace_back(p + ".oom_count", (*d)["oom"].is_null() ? 0.0 : (*d)["oom"]["count"].get<double>());
    if (p == "gpu")
      for (const auto& [cat, bytes] : (*d)["peak_by_category"].items())
        row.numbers.emplace_back("gpu.peak." + cat, bytes.get<double>());
  }
  if (!j["links"].empty()) {
    row.texts.emplace_back("busiest_link.name", j["links"][0]["name"].get<std::string>());
    row.numbers.emplace_back("busiest_link.utilization", j["links"][0]["utilization"].get<double>());
  }
  const auto& unfit = j["did_not_fit"];
  row.numbers.emplace_back("overflow_bytes", unfit.is_null() ? 0.0 : unfit["overflow_bytes"].get<double>());
  row.numbers.emplace_back("gpus", static_cast<double>(spec.cluster.total_gpus()));
  row.numbers.emplace_back("hardware_cost_usd", spec.cluster.price_usd());
  if (kinds)
    for (const auto& [name, value] : row.numbers)
      if (name == "gpus" || name.ends_with(".oom_count"))
        (*kinds)[name] = ColumnKind::whole;
  return row;
}

// A result with every column a point's results can have: those of a serving run of an
// MoE model with a GPU, a host and an NVMe device and a link (training runs have a subset).
RunResult every_result()
{
  RunResult r;
  for (DeviceKind k : {DeviceKind::gpu, DeviceKind::host, DeviceKind::nvme}) {
    PoolResult p;
    p.device.kind = k;
    r.pools.push_back(p);
  }
  r.links.push_back(LinkResult{});
  r.serving.present = true;
  r.moe.present     = true;
  return r;
}

std::vector<std::string> result_column_names()
{
  SweepRow row = result_row(every_result(), ExperimentSpec{});
  std::vector<std::string> names{"index", "status", "error"}; // the file's own columns
  for (const auto& [k, v] : row.numbers)
    names.push_back(k);
  for (const auto& [k, v] : row.texts)
    names.push_back(k);
  return names;
}

bool is_metric_name(const std::string& name)
{
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; });
}

} // namespace

void check_sweep_metrics(const SweepSpec& sweep)
{
  std::vector<std::string> results = result_column_names();
  auto known                       = [&](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  // An axis is also reachable by the last part of its key (setting_lookup).
  auto axis_tail = [&](const std::string& n) {
    return std::any_of(sweep.axes.begin(), sweep.axes.end(), [&](const std::string& a) { return is_key_tail(a, n); });
  };
  std::vector<std::string> earlier;
  for (const auto& [name, expr] : sweep.metrics) {
    const std::string& at = expr.where();
    if (!is_metric_name(name))
      throw InputError(at + ": a metric's name is letters, digits, '_' and '.', starting with a letter or '_'");
    if (known(results, name) || known(sweep.axes, name) || known(earlier, name))
      throw InputError(at + ": '" + name + "' is already a column (" +
                       (known(sweep.axes, name) ? "an axis"
                        : known(earlier, name)  ? "an earlier metric"
                                                : "a result") +
                       "); give the metric another name");
    for (const std::string& used : expr.names())
      if (!known(sweep.axes, used) && !known(results, used) && !known(earlier, used) && !axis_tail(used))
        throw InputError(at + ": unknown name '" + used + "'; names are the axes (" + join(sweep.axes) +
                         "), result columns such as step_time_s, tokens_per_s, gpu.peak_bytes, and earlier metrics");
    earlier.push_back(name);
  }
}

std::string summarize_point(const SweepSpec& sweep, const SweepPoint& point, const ExperimentSpec& spec,
                            const RunResult& r)
{
  SweepRow row = result_row(r, spec);
  // A full axis key first, then results and earlier derived metrics by name, then an
  // axis by the last part of its key: a metric called like an axis's tail wins, and the
  // full key still reaches the axis.
  auto lookup = [&](const std::string& name) -> std::optional<ExprValue> {
    for (const SweepSetting& s : point.settings)
      if (s.key == name)
        return setting_value(s);
    for (const auto& [k, v] : row.numbers)
      if (k == name)
        return v;
    for (const auto& [k, v] : row.texts)
      if (k == name)
        return v;
    return setting_lookup(point, name);
  };
  for (const auto& [name, expr] : sweep.metrics) {
    ExprValue v = expr.evaluate(lookup);
    if (const double* d = std::get_if<double>(&v))
      row.numbers.emplace_back(name, *d);
    else
      row.texts.emplace_back(name, std::get<std::string>(v));
  }

  Json out;
  out["numbers"] = row.numbers;
  out["texts"]   = row.texts;
  RunResult detail;
  if (sweep.record_memory)
    detail.pools = r.pools;
  if (sweep.record_links)
    detail.links = r.links;
  nlohmann::json d;
  to_json(d, detail);
  out["detail"] = d;
  return json_text(out);
}

SweepRow row_from_payload(int64_t index, const std::string& payload)
{
  Json j = Json::parse(payload);
  SweepRow row;
  row.index = index;
  for (const auto& kv : j["numbers"]) // NaN and infinities travel as null
    row.numbers.emplace_back(kv[0].get<std::string>(),
                             kv[1].is_number() ? kv[1].get<double>() : std::numeric_limits<double>::quiet_NaN());
  row.texts = j["texts"].get<std::vector<std::pair<std::string, std::string>>>();
  RunResult detail;
  from_json(nlohmann::json::parse(json_text(j["detail"])), detail);
  row.pools = std::move(detail.pools);
  row.links = std::move(detail.links);
  return row;
}

ColumnKind result_column_kind(const std::string& name)
{
  static const std::map<std::string, ColumnKind> kinds = [] {
    std::map<std::string, ColumnKind> k;
    result_row(every_result(), ExperimentSpec{}, &k);
    return k;
  }();
  auto it = kinds.find(name);
  return it == kinds.end() ? ColumnKind::real : it->second;
}

} // namespace memwall

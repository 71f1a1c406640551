// The readable summary and the CSV rows of a run (StepReport.hpp), rendered from its
// --json object so that a run file's stored summary reads the same as a fresh run.
#include "analysis/StepReport.hpp"
#include "hwmodels/TimingSources.hpp"

#include "analysis/ServingReport.hpp"
#include "base/JsonOutput.hpp"
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace memwall {

std::string report_text(const RunResult& r, const std::string& title) { return report_text(report_json(r), title); }

namespace {

void csv_rows(const nlohmann::ordered_json& v, const std::string& key, std::string& out)
{
  if (v.is_object()) {
    for (const auto& [k, x] : v.items())
      csv_rows(x, key.empty() ? k : key + "." + k, out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const auto& x    = v[i];
      std::string name = x.is_object() && x.contains("name") && x["name"].is_string() ? x["name"].get<std::string>()
                                                                                      : std::to_string(i);
      csv_rows(x, key + "." + name, out);
    }
  } else {
    if (!v.is_string()) { // numbers, true/false, null as JSON writes them
      out += key + "," + json_text(v) + "\n";
      return;
    }
    std::string q = "\"";
    for (char c : v.get<std::string>())
      q += c == '"' ? std::string("\"\"") : std::string(1, c);
    out += key + "," + q + "\"\n";
  }
}

const char* cause_text(const std::string& cause)
{
  static const std::map<std::string, const char*> names{{"cpu_optimizer_step", "CPU optimizer step"},
                                                        {"h2d_pageable_copies", "pageable host-to-device copies"},
                                                        {"h2d_pinned_copies", "pinned host-to-device copies"},
                                                        {"d2h_pageable_copies", "pageable device-to-host copies"},
                                                        {"d2h_pinned_copies", "pinned device-to-host copies"},
                                                        {"other_copies", "other copies"},
                                                        {"faults", "paging"}};
  auto it = names.find(cause);
  return it == names.end() ? cause.c_str() : it->second;
}

// Each stall by cause and phase, the three largest parts, and what would remove the
// largest one.
std::string stalls_text(const nlohmann::ordered_json& stalls)
{
  std::vector<double> seconds;
  for (const auto& p : stalls)
    seconds.push_back(p["seconds"].get<double>());
  auto t = format_durations(seconds);
  std::string line;
  for (size_t i = 0; i < stalls.size() && i < 3; ++i)
    line += std::string(i ? ", " : "") + t[i] + " " + cause_text(stalls[i]["cause"].get<std::string>()) + " in " +
            stalls[i]["phase"].get<std::string>();
  if (stalls.size() > 3)
    line += ", " + std::to_string(stalls.size() - 3) + " smaller";
  std::string out = "  stalled on     " + line + "\n";
  // What would remove each cause that holds a tenth of the stalls or more.
  double total = 0;
  for (double x : seconds)
    total += x;
  std::vector<std::string> said;
  for (size_t i = 0; i < stalls.size(); ++i) {
    std::string remedy = stalls[i]["remedy"].get<std::string>();
    if (seconds[i] < 0.1 * total || remedy.empty() || std::find(said.begin(), said.end(), remedy) != said.end())
      continue;
    out += std::string(said.empty() ? "  to remove it   " : "                 ") + remedy + "\n";
    said.push_back(remedy);
  }
  return out;
}

} // namespace

std::string report_csv(const nlohmann::ordered_json& j)
{
  std::string out = "key,value\n";
  csv_rows(j, "", out);
  return out;
}

std::string report_text(const nlohmann::ordered_json& j, const std::string& title)
{
  std::ostringstream os;
  char line[512];
  const bool serving = j.contains("ttft_s");
  const bool fitted  = j["fits"].get<bool>();
  // A recorded trace replayed: no model, so no tokens or model FLOPs to report, and the
  // time its GPU waits is the host's, not a pipeline's.
  const bool recorded = !serving && j["model_flops_per_step"].get<double>() == 0 &&
                        !(j["tokens_per_s"].is_number() && j["tokens_per_s"].get<double>() > 0);
  os << title << "\n";
  if (j.contains("hardware_profile")) { // results files written before profiles were named have none
    const auto& p = j["hardware_profile"];
    std::vector<std::pair<std::string, std::string>> sources; // kept since machines were compared by it
    if (p.contains("timing") && p["timing"].is_object())
      for (const auto& [part, source] : p["timing"].items())
        if (source.is_string())
          sources.emplace_back(part, source.get<std::string>());
    std::string parts   = timing_text(sources);
    std::string profile = p["name"] == "none"
                              ? ""
                              : "profile " + p["name"].get<std::string>() +
                                    (p["parts"] == "all" ? "" : " (" + p["parts"].get<std::string>() + ")");
    if (!parts.empty())
      os << "  GPU timing     " << parts << (profile.empty() ? "" : "\n                 " + profile) << "\n";
    else if (profile.empty())
      os << "  GPU timing from the catalog's estimated efficiencies (no fitted profile)\n";
    else
      os << "  GPU timing from " << profile << "\n";
  }
  os << "\n";
  if (!fitted) {
    const auto& d = j["did_not_fit"];
    if (d.contains("tensor_bytes")) {
      std::snprintf(line, sizeof line,
                    "  DID NOT FIT    %s needs %s of %s (%s over) in the %s allocator's segments, for %s of "
                    "tensors at their peak; first failing allocation %s\n",
                    d["device"].get<std::string>().c_str(), format_gib(d["needs_bytes"].get<double>()).c_str(),
                    format_gib(d["capacity_bytes"].get<double>()).c_str(),
                    format_gib(d["overflow_bytes"].get<double>()).c_str(), d["allocator"].get<std::string>().c_str(),
                    format_gib(d["tensor_bytes"].get<double>()).c_str(), d["what"].get<std::string>().c_str());
    } else if (d.contains("needs_bytes")) { // results files written before the demand was kept have none
      std::snprintf(line, sizeof line, "  DID NOT FIT    %s needs %s of %s (%s over); first failing allocation %s\n",
                    d["device"].get<std::string>().c_str(), format_gib(d["needs_bytes"].get<double>()).c_str(),
                    format_gib(d["capacity_bytes"].get<double>()).c_str(),
                    format_gib(d["overflow_bytes"].get<double>()).c_str(), d["what"].get<std::string>().c_str());
    } else {
      std::snprintf(line, sizeof line, "  DID NOT FIT    on %s, %s: %s over\n", d["device"].get<std::string>().c_str(),
                    d["what"].get<std::string>().c_str(), format_gib(d["overflow_bytes"].get<double>()).c_str());
    }
    os << line;
    if (d.contains("step_time_if_it_fit_s")) {
      std::snprintf(line, sizeof line, "  if it fit      step time %s, throughput %s (a GPU with room enough)\n",
                    format_duration(d["step_time_if_it_fit_s"].get<double>()).c_str(),
                    format_si(d["tokens_per_s_if_it_fit"].get<double>(), "tokens/s").c_str());
      os << line;
    }
    os << "                 `memwall advise` on the same spec suggests what would make it fit\n";
    if (serving)
      os << serving_text(j);
  } else if (serving) {
    std::snprintf(line, sizeof line, "  run time       %s (simulated)\n",
                  format_duration(j["step_time_s"].get<double>()).c_str());
    os << line << serving_text(j);
  } else if (recorded && j.contains("trace") && j["trace"].contains("profiler_steps")) {
    // A trace's window is what it recorded: one or several of torch.profiler's steps.
    const auto& t  = j["trace"];
    double window  = j["step_time_s"].get<double>();
    int64_t steps  = t["profiler_steps"].get<int64_t>();
    std::string of = steps > 1 ? ": " + std::to_string(steps) + " profiler steps, " +
                                     format_duration(window / static_cast<double>(steps)) + " each"
                     : steps == 1 ? ": one profiler step"
                                  : " (no ProfilerStep marks in the trace)";
    std::snprintf(line, sizeof line, "  trace window   %s replayed%s\n", format_duration(window).c_str(), of.c_str());
    os << line;
    std::snprintf(line, sizeof line, "  ranks          %lld replayed, one GPU each\n",
                  static_cast<long long>(t["ranks"].get<int64_t>()));
    os << line;
  } else {
    std::snprintf(line, sizeof line, "  step time      %s\n", format_duration(j["step_time_s"].get<double>()).c_str());
    os << line;
    if (!recorded) {
      std::snprintf(line, sizeof line, "  throughput     %s\n",
                    format_si(j["tokens_per_s"].get<double>(), "tokens/s").c_str());
      os << line;
    }
  }
  if (fitted && recorded) {
    // The window's parts, adding up to it: what the GPU did, the host's own time between
    // launches it waited on, copies, and the rest idle.
    const auto& b  = j["breakdown_s"];
    double window  = j["step_time_s"].get<double>();
    double parts[] = {b["compute"].get<double>(), b["exposed_comm"].get<double>(), b["host_overhead"].get<double>(),
                      b["offload_stall"].get<double>() + b["paging_stall"].get<double>()};
    double idle    = window;
    for (double x : parts)
      idle -= x;
    auto t = format_durations({parts[0], parts[1], parts[2], parts[3], std::max(0.0, idle)});
    std::snprintf(line, sizeof line, "  time spent     compute %s, exposed comm %s, host %s, copies %s, GPU idle %s\n",
                  t[0].c_str(), t[1].c_str(), t[2].c_str(), t[3].c_str(), t[4].c_str());
    os << line;
  } else if (fitted) {
    std::snprintf(line, sizeof line, "  model FLOPs    %s per %s, MFU %.1f %%\n",
                  format_si(j["model_flops_per_step"].get<double>(), "FLOP").c_str(), serving ? "run" : "step",
                  100 * j["mfu"].get<double>());
    os << line;
    const auto& b = j["breakdown_s"];
    // Host overhead (a framework's own Python and launches) only where a stack has any.
    double host           = b.contains("host_overhead") ? b["host_overhead"].get<double>() : 0.0;
    auto t                = format_durations({b["compute"].get<double>(), b["exposed_comm"].get<double>(), host,
                                              b["pipeline_bubble"].get<double>(), b["offload_stall"].get<double>()});
    std::string host_part = host > 0 ? ", host overhead " + t[2] : std::string();
    std::snprintf(line, sizeof line,
                  "  time spent     compute %s, exposed comm %s%s, pipeline bubble %s, offload stall %s\n",
                  t[0].c_str(), t[1].c_str(), host_part.c_str(), t[3].c_str(), t[4].c_str());
    os << line;
  }
  if (fitted && j.contains("stalls") && !j["stalls"].empty())
    os << stalls_text(j["stalls"]);
  if (fitted && j.contains("energy") && j["energy"]["power_w"].is_number()) {
    const auto& e   = j["energy"];
    double per_hour = e["power_w"].get<double>() / 1e6 * e["usd_per_mwh"].get<double>();
    // Results written before node power have no power_of: their power was the GPUs'.
    bool node = e.contains("power_of") && e["power_of"] == "node system power";
    std::string why =
        !node ? "the GPUs' TDP x PUE"
        : e.contains("gpu_power_w") && e["gpu_power_w"].is_number()
            ? "the nodes' system power x PUE; the GPUs' TDP alone " + format_si(e["gpu_power_w"].get<double>(), "W")
            : "the nodes' system power x PUE";
    std::snprintf(line, sizeof line, "  energy         %s per %s at %s (%s), %s an hour at %s/MWh\n",
                  format_si(e["joules_per_step"].get<double>() / 3600, "Wh").c_str(),
                  serving    ? "run"
                  : recorded ? "trace window"
                             : "step",
                  format_si(e["power_w"].get<double>(), "W").c_str(), why.c_str(), format_usd_cents(per_hour).c_str(),
                  format_usd(e["usd_per_mwh"].get<double>()).c_str());
    os << line;
  }
  if (j.contains("paging")) {
    const auto& p = j["paging"];
    double moved =
        p["migrated_h2d_bytes"].get<double>() + p["migrated_d2h_bytes"].get<double>() + p["remote_bytes"].get<double>();
    if (moved > 0) {
      std::string stall = fitted ? format_duration(j["breakdown_s"]["paging_stall"].get<double>()) + " stalled; " : "";
      std::snprintf(line, sizeof line,
                    "  paging         %s%s faults in %s batches, %s in, %s evicted, %s read remotely\n", stall.c_str(),
                    format_count(p["faults"].get<double>()).c_str(),
                    format_count(p["fault_batches"].get<double>()).c_str(),
                    format_gib(p["migrated_h2d_bytes"].get<double>()).c_str(),
                    format_gib(p["migrated_d2h_bytes"].get<double>()).c_str(),
                    format_gib(p["remote_bytes"].get<double>()).c_str());
      os << line;
    }
  }
  bool no_memory =
      j.contains("trace") && j["trace"].contains("memory_recorded") && !j["trace"]["memory_recorded"].get<bool>();
  if (no_memory)
    os << "\n  memory         not in the trace: torch.profiler's profile_memory=True records the allocator's events\n";
  else
    os << "\n  memory (peak per device, by category at the peak instant)\n";
  for (const auto& d : no_memory ? nlohmann::ordered_json::array() : j["devices"]) {
    const auto& oom = d["oom"];
    std::snprintf(line, sizeof line, "  %-14s x%-4d %-18s %10s of %10s  %s\n", d["name"].get<std::string>().c_str(),
                  d["count"].get<int>(), d["hardware"].get<std::string>().c_str(),
                  format_gib(d["peak_bytes"].get<double>()).c_str(),
                  format_gib(d["capacity_bytes"].get<double>()).c_str(), oom.is_null() ? "fits" : "OUT OF MEMORY");
    os << line;
    std::string parts;
    for (const auto& [cat, bytes] : d["peak_by_category"].items())
      if (bytes.get<double>() > 0)
        parts += (parts.empty() ? "" : ", ") + cat + " " + format_gib(bytes.get<double>());
    os << "      " << parts << "\n";
    if (d.contains("allocator")) {
      double held = d["allocator"]["peak_reserved_bytes"].get<double>();
      os << "      " << format_gib(held) << " held at most with the " << d["allocator"]["name"].get<std::string>()
         << " allocator's segments (reserved, the context included; out of memory when a new one does not fit)\n";
      if (held > d["capacity_bytes"].get<double>())
        os << "      more than the GPU holds: the replay goes on past the failing cudaMalloc to show the whole "
              "demand\n";
    }
    if (!oom.is_null()) {
      std::snprintf(line, sizeof line,
                    "      first OOM at %.4f s in %s: asked %s with %s free (%lld failing allocations)\n",
                    oom["time_s"].get<double>(), oom["op"].get<std::string>().c_str(),
                    format_gib(oom["requested_bytes"].get<double>()).c_str(),
                    format_gib(oom["free_bytes"].get<double>()).c_str(), oom["count"].get<long long>());
      os << line;
    }
  }
  if (j.contains("trace")) {
    const auto& t = j["trace"];
    std::snprintf(line, sizeof line, "\n  kernels by class, recorded on %s, replayed on %s (each alone on its GPU)\n",
                  t["recorded_on"].get<std::string>().c_str(), t["replayed_on"].get<std::string>().c_str());
    os << line;
    for (const auto& [name, c] : t["kernel_classes"].items()) {
      std::snprintf(line, sizeof line, "  %-12s %7lld kernels  %10s recorded  %10s replayed  x%.2f\n", name.c_str(),
                    c["kernels"].get<long long>(), format_duration(c["recorded_s"].get<double>()).c_str(),
                    format_duration(c["replayed_s"].get<double>()).c_str(), c["speedup"].get<double>());
      os << line;
    }
    if (t["collectives"].get<int64_t>() > 0) {
      std::snprintf(line, sizeof line, "  %-12s %7lld NCCL kernels, %s recorded, timed by the collective model\n",
                    "collectives", t["collectives"].get<long long>(),
                    format_duration(t["collectives_recorded_s"].get<double>()).c_str());
      os << line;
    }
  }
  const auto& links = j["links"];
  if (!links.empty())
    os << "\n  busiest links\n";
  for (size_t i = 0; i < links.size() && i < 6; ++i) {
    const auto& l = links[i];
    std::snprintf(line, sizeof line, "  %-34s %5.1f %% of %s, %s moved\n", l["name"].get<std::string>().c_str(),
                  100 * l["utilization"].get<double>(), format_si(l["bandwidth"].get<double>(), "B/s").c_str(),
                  format_si(l["bytes"].get<double>(), "B").c_str());
    os << line;
  }
  return os.str();
}

} // namespace memwall

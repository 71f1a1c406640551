#include "analysis/StepReport.hpp"

#include "analysis/ServingReport.hpp"
#include "base/Quantity.hpp"
#include "hwmodels/TimingSources.hpp"

#include <algorithm>

namespace memwall {
namespace {

nlohmann::ordered_json categories(const CategoryBytes& c)
{
  nlohmann::ordered_json j;
  for (size_t i = 0; i < mem_category_count; ++i)
    j[mem_category_names()[i]] = c[i];
  return j;
}

double link_utilization(const LinkResult& l, double step)
{
  return l.bandwidth > 0 && step > 0 ? l.bytes / (l.bandwidth * step) : 0.0;
}

std::vector<const LinkResult*> links_by_utilization(const RunResult& r)
{
  std::vector<const LinkResult*> v;
  for (const auto& l : r.links)
    v.push_back(&l);
  std::stable_sort(v.begin(), v.end(), [&](const LinkResult* a, const LinkResult* b) {
    return link_utilization(*a, r.makespan_s) > link_utilization(*b, r.makespan_s);
  });
  return v;
}

// Unified memory on the GPU the breakdown describes; zeros when nothing is managed.
nlohmann::ordered_json paging_json(const RunResult& r)
{
  PagingResult none;
  const PagingResult* p = &none;
  if (const DeviceRef* gpu = busiest_gpu(r))
    for (const auto& g : r.paging)
      if (g.device == *gpu)
        p = &g;
  return {{"faults", p->faults},
          {"fault_batches", p->fault_batches},
          {"migrated_h2d_bytes", p->migrated_h2d_bytes},
          {"migrated_d2h_bytes", p->migrated_d2h_bytes},
          {"evictions", p->evictions},
          {"thrashing_pages", p->thrashing_pages},
          {"remote_bytes", p->remote_bytes},
          {"demand_bytes", p->peak_demand_bytes}};
}

// What would remove a stall of this cause: the settings that change it.
const char* stall_remedy(const std::string& stall, const std::string& cause, StepPhase phase)
{
  if (stall == "paging")
    return phase == StepPhase::optimizer
               ? "prefetch before use (memory.prefetch: layer) or keep the optimizer states off unified memory "
                 "(memory.managed without optimizer)"
               : "prefetch before use (memory.prefetch: layer), or manage less memory (memory.managed)";
  if (cause == "cpu_optimizer_step")
    return "overlap the CPU step with backward (training.offload.overlap_step: true, unless on already), or keep the "
           "optimizer on the GPUs (more GPUs, a higher ZeRO stage, no optimizer offload)";
  if (cause == "h2d_pageable_copies" || cause == "d2h_pageable_copies")
    return "pin the host buffers (training.offload.pinned: true): pageable copies are staged by one CPU thread "
           "through the driver's buffer (hardware.node.pageable_copy_bw)";
  if (cause == "h2d_pinned_copies" || cause == "d2h_pinned_copies")
    return "the host link is the limit: offload less (training.offload.params: none), or a faster host link";
  return "";
}

nlohmann::ordered_json stalls_json(const Breakdown& b, bool ok)
{
  nlohmann::ordered_json v = nlohmann::ordered_json::array();
  if (!ok)
    return v;
  for (const Breakdown::Part& p : b.stall_parts)
    v.push_back({{"stall", p.stall},
                 {"cause", p.cause},
                 {"phase", phase_name(p.phase)},
                 {"seconds", p.seconds},
                 {"remedy", stall_remedy(p.stall, p.cause, p.phase)}});
  return v;
}

} // namespace

// A server whose KV cache cannot hold one request's smallest reservation runs none: it
// does not fit, though no allocation failed during the replay.
bool serving_has_no_room(const RunResult& r) { return r.serving.present && r.serving.kv_no_room; }

bool fits(const RunResult& r)
{
  return !serving_has_no_room(r) &&
         std::all_of(r.pools.begin(), r.pools.end(), [](const PoolResult& p) { return p.oom_count == 0; });
}

nlohmann::ordered_json did_not_fit(const RunResult& r)
{
  // The shortfall is the device's whole demand over its capacity, not the first failing
  // allocation's: the replay goes on allocating past it, so its peak is what the job needs.
  // Through an allocator the device must hold its segments, which are at least the
  // tensors; an out-of-memory is a segment that did not fit, so the demand is over the
  // capacity either way. Its time is that of the same GPU with room enough (allocations
  // never slow a kernel).
  for (const auto& p : r.pools)
    if (p.oom_count > 0) {
      const OomEvent& o = p.ooms.front();
      const bool served = !p.allocator.empty();
      double needs      = served ? std::max(p.peak_bytes, p.peak_reserved_bytes) : p.peak_bytes;
      nlohmann::ordered_json d{{"device", p.name},
                               {"what", o.op},
                               {"time_s", o.time},
                               {"needs_bytes", needs},
                               {"capacity_bytes", p.capacity},
                               {"overflow_bytes", std::max(needs - p.capacity, 0.0)}};
      if (served) {
        d["allocator"]    = p.allocator;
        d["tensor_bytes"] = p.peak_bytes;
      }
      if (!r.serving.present && r.makespan_s > 0) {
        d["step_time_if_it_fit_s"]  = r.makespan_s;
        d["tokens_per_s_if_it_fit"] = r.tokens_per_step / r.makespan_s;
      }
      return d;
    }
  if (serving_has_no_room(r))
    for (const auto& p : r.pools)
      if (p.device.kind == DeviceKind::gpu)
        return {{"device", p.name},
                {"what", !r.serving.kv_refusal.empty()
                             ? "the engine would not start, saying \"" + r.serving.kv_refusal + "\""
                             : "weights (" + format_gib(p.max_by_category[static_cast<size_t>(MemCategory::weights)]) +
                                   " per GPU), activations and context leave no room for one KV block in the memory "
                                   "the server may use (gpu_memory_utilization of the GPU; memwall advise suggests "
                                   "remedies)"},
                {"time_s", 0.0},
                {"overflow_bytes", r.serving.kv_shortfall_bytes}};
  return nullptr;
}

nlohmann::ordered_json report_json(const RunResult& r)
{
  nlohmann::ordered_json j;
  double step = r.makespan_s;
  // A run that did not fit reports no time and no throughput: the replay went on past
  // the failing allocation, but no real GPU would have.
  const bool ok     = fits(r);
  auto timed        = [ok](double v) { return ok ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  j["step_time_s"]  = timed(step);
  j["tokens_per_s"] = timed(step > 0 ? r.tokens_per_step / step : 0.0);
  j["model_flops_per_step"] = r.model_flops_per_step;
  double peak_total         = r.peak_flops_per_gpu * r.gpus;
  j["mfu"]                  = timed(step > 0 && peak_total > 0 ? r.model_flops_per_step / (step * peak_total) : 0.0);
  j["fits"]                 = ok;
  j["did_not_fit"]          = did_not_fit(r);
  double max_peak           = 0;
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const auto& p : r.pools) {
    // The GPUs' peak, what `fits` is about; a host's DRAM (offload, pinned buffers) is its
    // own device entry and would read as a GPU over capacity.
    if (p.device.kind == DeviceKind::gpu)
      max_peak = std::max(max_peak, p.peak_bytes);
    nlohmann::ordered_json d;
    d["name"]     = p.name;
    d["kind"]     = p.device.kind == DeviceKind::gpu ? "gpu" : p.device.kind == DeviceKind::host ? "host" : "nvme";
    d["hardware"] = p.hardware;
    d["count"]    = p.count;
    d["capacity_bytes"]   = p.capacity;
    d["peak_bytes"]       = p.peak_bytes;
    d["peak_time_s"]      = p.peak_time;
    d["peak_by_category"] = categories(p.peak_by_category);
    d["max_by_category"]  = categories(p.max_by_category);
    if (!p.allocator.empty())
      d["allocator"] = {{"name", p.allocator}, {"peak_reserved_bytes", p.peak_reserved_bytes}};
    if (p.oom_count > 0) {
      const OomEvent& o = p.ooms.front();
      d["oom"]          = {{"op", o.op},
                           {"time_s", o.time},
                           {"requested_bytes", o.requested},
                           {"free_bytes", o.free},
                           {"count", p.oom_count}};
    } else {
      d["oom"] = nullptr;
    }
    devices.push_back(d);
  }
  j["max_peak_bytes"]          = max_peak;
  j["devices"]                 = devices;
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const LinkResult* l : links_by_utilization(r))
    links.push_back({{"name", l->name},
                     {"bandwidth", l->bandwidth},
                     {"bytes", l->bytes},
                     {"busy_s", l->busy_s},
                     {"utilization", link_utilization(*l, step)}});
  j["links"]       = links;
  Breakdown b      = step_breakdown(r);
  j["breakdown_s"] = {{"compute", timed(b.compute)},
                      {"exposed_comm", timed(b.exposed_comm)},
                      {"pipeline_bubble", timed(b.pipeline_bubble)},
                      {"offload_stall", timed(b.offload_stall)},
                      {"paging_stall", timed(b.paging_stall)},
                      {"host_overhead", timed(b.host_overhead)}};
  j["stalls"]      = stalls_json(b, ok);
  j["paging"]      = paging_json(r);
  // Energy at the nodes' system power (the vendor's full-load figure: GPUs, CPUs, memory,
  // NICs, fans) per GPU times the PUE, where the node has one, else at the GPUs' board
  // power (TDP) alone, a lower bound on the facility's; both at full load, an upper bound
  // on the draw (GPUs rarely hold TDP). `gpu_power_w` is the GPUs' share beside it.
  bool powered = r.power_w > 0;
  auto energy  = [&](double v) { return ok && powered ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  auto watts   = [](double w) { return w > 0 ? nlohmann::ordered_json(w) : nlohmann::ordered_json(nullptr); };
  bool node_power = powered && r.power_w != r.gpu_power_w;
  j["energy"]     = {{"power_w", watts(r.power_w)},
                     {"power_of", !powered     ? "unknown"
                                  : node_power ? "node system power"
                                               : "GPU TDP"},
                     {"gpu_power_w", watts(r.gpu_power_w)},
                     {"joules_per_step", energy(r.power_w * step)},
                     {"usd_per_step", energy(r.power_w * step / 3.6e9 * r.usd_per_mwh)},
                     {"usd_per_mwh", r.usd_per_mwh}};
  // The fitted profile that timed the kernels: catalog id or file, what it was fitted on,
  // which parts came from where ("all": the one profile; "none": the catalog's estimated
  // efficiencies). Never empty: these are sweep columns, where empty reads as missing.
  bool none             = r.profile.name.empty();
  j["hardware_profile"] = {{"name", none ? "none" : r.profile.name},
                           {"source", none                       ? "catalog estimates"
                                      : r.profile.source.empty() ? "unknown"
                                                                 : r.profile.source},
                           {"parts", none || r.profile.parts.empty() ? "all" : r.profile.parts}};
  // Where each part's timing came from (TimingSources.hpp): a comparison of machines
  // reads these columns to tell calibration from hardware.
  nlohmann::ordered_json timing = nlohmann::ordered_json::object();
  for (const std::string& part : timing_parts()) {
    auto it      = std::find_if(r.profile.timing.begin(), r.profile.timing.end(),
                                [&](const auto& kv) { return kv.first == part; });
    timing[part] = it == r.profile.timing.end() ? "unknown" : it->second;
  }
  j["hardware_profile"]["timing"] = timing;
  if (r.moe.present) // the routing assumed: sweeps over capacity_factor or hot_expert_tokens read it
    j["moe"] = {{"experts_per_gpu", r.moe.experts_per_gpu},
                {"busiest_gpu_share", r.moe.busiest_share},
                {"dropped_share", r.moe.dropped_share}};
  if (r.serving.present)
    add_serving_json(j, r);
  if (r.recorded.present) {
    const RecordedKernels& k       = r.recorded;
    nlohmann::ordered_json classes = nlohmann::ordered_json::object();
    for (const auto& [name, c] : k.classes)
      classes[name] = {{"kernels", c.kernels},
                       {"recorded_s", c.recorded_s},
                       {"replayed_s", c.replayed_s},
                       {"speedup", c.replayed_s > 0 ? c.recorded_s / c.replayed_s : 0.0}};
    j["trace"] = {{"recorded_on", k.recorded_on},
                  {"replayed_on", k.replayed_on},
                  {"kernel_classes", classes},
                  {"collectives", k.collectives},
                  {"collectives_recorded_s", k.collectives_recorded_s},
                  {"unclassified_kernel_time_s", k.unclassified_kernel_time_s},
                  {"ranks", k.ranks},
                  {"profiler_steps", k.profiler_steps},
                  {"memory_recorded", k.memory_recorded}};
  }
  return j;
}

const nlohmann::ordered_json* fullest_device(const nlohmann::ordered_json& devices, const std::string& kind)
{
  const nlohmann::ordered_json* fullest = nullptr;
  double most                           = -1;
  for (const auto& d : devices) {
    if (!kind.empty() && d["kind"] != kind)
      continue;
    double cap  = d["capacity_bytes"].get<double>();
    double fill = cap > 0 ? d["peak_bytes"].get<double>() / cap : 0.0;
    if (fill > most) {
      most    = fill;
      fullest = &d;
    }
  }
  return fullest;
}

} // namespace memwall

#include "sim/result/RunResult.hpp"

namespace memwall {

NLOHMANN_JSON_SERIALIZE_ENUM(OpKind, {{OpKind::kernel, "kernel"},
                                      {OpKind::copy, "copy"},
                                      {OpKind::collective, "collective"},
                                      {OpKind::host_compute, "host_compute"},
                                      {OpKind::alloc, "alloc"},
                                      {OpKind::free, "free"},
                                      {OpKind::chain, "chain"}})
NLOHMANN_JSON_SERIALIZE_ENUM(StreamKind, {{StreamKind::compute, "compute"},
                                          {StreamKind::h2d, "h2d"},
                                          {StreamKind::d2h, "d2h"},
                                          {StreamKind::comm, "comm"},
                                          {StreamKind::host, "host"},
                                          {StreamKind::p2p, "p2p"},
                                          {StreamKind::gather, "gather"},
                                          {StreamKind::tp_comm, "tp_comm"}})
NLOHMANN_JSON_SERIALIZE_ENUM(StepPhase, {{StepPhase::setup, "setup"},
                                         {StepPhase::forward, "forward"},
                                         {StepPhase::backward, "backward"},
                                         {StepPhase::optimizer, "optimizer"},
                                         {StepPhase::serving, "serving"}})
NLOHMANN_JSON_SERIALIZE_ENUM(DeviceKind,
                             {{DeviceKind::gpu, "gpu"}, {DeviceKind::host, "host"}, {DeviceKind::nvme, "nvme"}})
NLOHMANN_JSON_SERIALIZE_ENUM(MemCategory, {{MemCategory::weights, "weights"},
                                           {MemCategory::gradients, "gradients"},
                                           {MemCategory::optimizer, "optimizer"},
                                           {MemCategory::activations, "activations"},
                                           {MemCategory::kv_cache, "kv_cache"},
                                           {MemCategory::workspace, "workspace"},
                                           {MemCategory::context, "context"},
                                           {MemCategory::other, "other"}})

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceRef, kind, node, index)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OpRecord, name, kind, stream, phase, device, start, end, bytes, flops, paging_s,
                                   pageable)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemoryEvent, time, category, category_bytes, total_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OomEvent, op, time, requested, free)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PoolResult, device, name, hardware, count, capacity, peak_bytes, peak_time,
                                   peak_by_category, max_by_category, timeline, ooms, oom_count, allocator,
                                   peak_reserved_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ManagedSample, time, resident_bytes, host_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PagingResult, device, name, faults, fault_batches, evictions, migrated_h2d_bytes,
                                   migrated_d2h_bytes, thrashing_pages, remote_bytes, stall_s, peak_demand_bytes,
                                   timeline)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LinkResult, name, bandwidth, bytes, busy_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RequestRecord, id, arrival_s, first_token_s, finish_s, max_itl_s, prompt_tokens,
                                   output_tokens, preemptions, rejected, reject_reason, scheduled_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KvSample, time, used_bytes, reserved_bytes, running, waiting)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ServingStats, present, requests, kv, iterations, preemptions, swaps,
                                   max_running_seqs, kv_capacity_tokens, kv_bytes_per_token, kv_budget_bytes,
                                   kv_no_room, kv_shortfall_bytes, kv_accounting, kv_refusal, kv_offloaded_fraction,
                                   kv_offload_place)

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RecordedClass, kernels, recorded_s, replayed_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MoeRouting, present, experts_per_gpu, busiest_share, dropped_share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileUsed, name, source, parts, timing)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RecordedKernels, present, recorded_on, replayed_on, classes, collectives,
                                   collectives_recorded_s, unclassified_kernel_time_s, ranks, profiler_steps,
                                   memory_recorded)

void to_json(nlohmann::json& j, const IntervalUnion& u) { j = u.intervals(); }
void from_json(const nlohmann::json& j, IntervalUnion& u)
{
  for (const auto& [a, b] : j.get<std::vector<IntervalUnion::Interval>>())
    u.add(a, b);
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepIntervals, present, gpu, compute, comm, copies, paging, host, copy_parts,
                                   paging_parts)

void to_json(nlohmann::json& j, const RunResult& r)
{
  j = nlohmann::json{{"makespan_s", r.makespan_s},
                     {"model_flops_per_step", r.model_flops_per_step},
                     {"tokens_per_step", r.tokens_per_step},
                     {"gpus", r.gpus},
                     {"peak_flops_per_gpu", r.peak_flops_per_gpu},
                     {"power_w", r.power_w},
                     {"gpu_power_w", r.gpu_power_w},
                     {"usd_per_mwh", r.usd_per_mwh},
                     {"ops", r.ops},
                     {"step_intervals", r.step_intervals},
                     {"pools", r.pools},
                     {"links", r.links},
                     {"paging", r.paging},
                     {"serving", r.serving},
                     {"recorded", r.recorded},
                     {"moe", r.moe},
                     {"profile", r.profile},
                     {"activities", r.activities},
                     {"op_count", r.op_count}};
}

void from_json(const nlohmann::json& j, RunResult& r)
{
  j.at("makespan_s").get_to(r.makespan_s);
  j.at("model_flops_per_step").get_to(r.model_flops_per_step);
  j.at("tokens_per_step").get_to(r.tokens_per_step);
  j.at("gpus").get_to(r.gpus);
  j.at("peak_flops_per_gpu").get_to(r.peak_flops_per_gpu);
  if (j.contains("power_w")) { // absent from results written before energy was reported
    j.at("power_w").get_to(r.power_w);
    r.gpu_power_w = j.value("gpu_power_w", r.power_w); // before node power: the GPUs' was the power
    j.at("usd_per_mwh").get_to(r.usd_per_mwh);
  }
  j.at("ops").get_to(r.ops);
  if (j.contains("step_intervals"))
    j.at("step_intervals").get_to(r.step_intervals);
  j.at("pools").get_to(r.pools);
  j.at("links").get_to(r.links);
  if (j.contains("paging")) // absent from results written before unified memory
    j.at("paging").get_to(r.paging);
  j.at("serving").get_to(r.serving);
  if (j.contains("recorded")) // absent from results written before trace replay
    j.at("recorded").get_to(r.recorded);
  if (j.contains("profile")) // absent from results written before profiles were named
    j.at("profile").get_to(r.profile);
  if (j.contains("moe")) // absent from results written before MoE models
    j.at("moe").get_to(r.moe);
  if (j.contains("activities"))
    j.at("activities").get_to(r.activities);
  if (j.contains("op_count"))
    j.at("op_count").get_to(r.op_count);
}

} // namespace memwall

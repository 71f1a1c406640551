#include "sim/Simulation.hpp"

#include "base/ChildPool.hpp"
#include "base/InputError.hpp"
#include "base/StderrCapture.hpp"
#include "hwmodels/Catalog.hpp"
#include "hwmodels/GpuNames.hpp"
#include "hwmodels/TimingSources.hpp"
#include "sim/platform/SimGridSettings.hpp"
#include "sim/timing/KernelTimer.hpp"
#include "workloads/inference/ServingDriver.hpp"
#include "workloads/model/ExpertLoad.hpp"
#include "workloads/trace/TraceImporter.hpp"
#include "workloads/trace/TraceNames.hpp"
#include "workloads/training/TrainingStepGenerator.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

namespace memwall {

OpDag build_workload(const ExperimentSpec& spec, bool chains)
{
  return TrainingStepGenerator(spec.model, spec.training, spec.cluster).generate(chains);
}

void start_engine()
{
  // Logging off before the Engine exists; exactness settings before the first zone.
  xbt_log_control_set("root.thres:critical");
  // The engine lives until the process ends, and is not taken apart then: freeing the
  // platform and the model state one object at a time cost a 3,072-GPU run 4 % of its
  // CPU (measured), for memory the process hands back whole. Hence no atexit clean-up
  // (SimGrid's debug/clean-atexit) and an Engine that is never destroyed.
  int argc                            = 2;
  char name[]                         = "memwall";
  char no_exit[]                      = "--cfg=debug/clean-atexit:0";
  char* argv[]                        = {name, no_exit, nullptr};
  static simgrid::s4u::Engine* engine = new simgrid::s4u::Engine(&argc, argv);
  (void)engine;
  configure_exact_simgrid();
}

static RunResult in_child(const std::function<RunResult()>& work)
{
  ChildOutcome out = run_in_child([&] {
    std::vector<uint8_t> cbor = nlohmann::json::to_cbor(nlohmann::json(work()));
    return std::string(cbor.begin(), cbor.end());
  });
  if (out.kind == ChildOutcome::Kind::input_error)
    throw InputError(out.data);
  if (out.kind == ChildOutcome::Kind::failure)
    throw std::runtime_error(out.data);
  return nlohmann::json::from_cbor(out.data).get<RunResult>();
}

// What a replay builds (its platform, its replayer) lives until the process ends, as the
// engine does (start_engine): there is one replay per process, and taking a 3,072-GPU
// platform and its replayer apart cost 2 % of the run's CPU (measured). Kept reachable
// from here, so that leak checkers do not count it.
template <typename T, typename... Args>
static T& kept_for_the_process(Args&&... args)
{
  static auto* kept = new std::vector<void*>;
  T* made           = new T(std::forward<Args>(args)...);
  kept->push_back(made);
  return *made;
}

// Runs `work` with SimGrid's direct writes to stderr held back (StderrCapture.hpp).
template <typename Work>
static RunResult with_simgrid_stderr_captured(Work work)
{
  StderrCapture simgrid_stderr;
  try {
    return work();
  } catch (...) {
    simgrid_stderr.drop();
    throw;
  }
}

RunResult replay(const ClusterSpec& cluster, const OpDag& dag, const ReplayOptions& options)
{
  return with_simgrid_stderr_captured([&] {
    start_engine();
    Platform& platform = kept_for_the_process<Platform>(cluster);
    return kept_for_the_process<Replayer>(dag, platform, options).run();
  });
}

RunResult replay_in_child(const ClusterSpec& cluster, const OpDag& dag, const ReplayOptions& options)
{
  return in_child([&] { return replay(cluster, dag, options); });
}

RunResult serve(const ExperimentSpec& spec, const ReplayOptions& options)
{
  ServingDriver driver(spec.model, spec.inference, spec.cluster);
  RunResult r            = with_simgrid_stderr_captured([&] {
    start_engine();
    Platform& platform = kept_for_the_process<Platform>(spec.cluster);
    return kept_for_the_process<Replayer>(driver, platform, options).run();
  });
  r.model_flops_per_step = driver.model_flops();
  r.serving              = driver.take_stats();
  for (const RequestRecord& q : r.serving.requests)
    if (!q.rejected)
      r.tokens_per_step += static_cast<double>(q.output_tokens);
  r.gpus               = spec.cluster.total_gpus();
  r.peak_flops_per_gpu = spec.cluster.node.gpu.peak(spec.inference.gemm_dtype());
  return r;
}

// The replayed trace's kernels by class: recorded time, and time on the replayed GPU
// by the same rule the replay uses (KernelTimer). NCCL's kernels are counted apart,
// whether they run as recorded or as collectives.
static RecordedKernels recorded_kernels(const OpDag& dag, const GpuSpec& from, const GpuSpec& to)
{
  RecordedKernels k;
  k.recorded_on = from.id;
  k.replayed_on = to.id;
  KernelTimer timer(to, &from);
  static const char* names[] = {"gemm", "attention", "elementwise", "other"};
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.seconds <= 0)
      continue;
    if (op.kind == OpKind::collective || (op.kind == OpKind::kernel && is_nccl_kernel(op.name.str()))) {
      k.collectives++;
      k.collectives_recorded_s += op.seconds;
    } else if (op.kind == OpKind::kernel) {
      RecordedClass& c = k.classes[names[static_cast<int>(op.kclass)]];
      double replayed  = timer(op).total_s(0);
      c.kernels++;
      c.recorded_s += op.seconds;
      c.replayed_s += replayed;
      if (op.kclass == KernelClass::other)
        k.unclassified_kernel_time_s += replayed;
    }
  }
  k.present = !k.classes.empty() || k.collectives > 0; // an exported step's ops are all modelled
  return k;
}

// The catalog GPU a trace was recorded on: workload.recorded_on, else the one its
// deviceProperties name and memory describe (GpuNames.hpp: "NVIDIA H100 80GB HBM3" ->
// h100-sxm-80gb, "NVIDIA A100-PG509-200" with 39.4 GiB -> a100-sxm4-40gb).
static GpuSpec recorded_gpu(const ExperimentSpec& spec, const std::vector<KinetoTrace>& traces)
{
  for (const KinetoTrace& t : traces)
    if (t.gpu_name != traces.front().gpu_name)
      throw InputError(t.file + ": ranks disagree: recorded on '" + t.gpu_name + "', " + traces.front().file + " on '" +
                       traces.front().gpu_name + "'");
  if (!spec.trace_recorded_on.empty())
    return gpu_preset(spec.trace_recorded_on);
  if (traces.front().gpu_name.empty())
    throw InputError(traces.front().file + ": the trace does not say which GPU it was recorded on "
                                           "(no deviceProperties); name it with workload.recorded_on");
  std::string id = gpu_id_from_device_name(traces.front().gpu_name, traces.front().gpu_memory_bytes);
  if (id.empty())
    throw InputError(traces.front().file + ": recorded on '" + traces.front().gpu_name +
                     "', which is not a GPU preset; name the closest with workload.recorded_on "
                     "(see `memwall list gpus`)");
  return gpu_preset(id);
}

static RunResult replay_traces(const ExperimentSpec& spec, bool child, ReplayOptions options)
{
  GpuSpec recorded;
  nlohmann::json step; // an exported step's tokens and precision
  int64_t ranks = 0, profiler_steps = 0;
  bool memory = false;
  // The traces are let go before the replay: a large one is most of the memory.
  OpDag dag = [&] {
    std::vector<KinetoTrace> traces;
    for (const std::string& f : spec.traces)
      traces.push_back(read_kineto_trace(f));
    bool exported = false; // memwall's own ops (`memwall export`): modelled, on any GPU
    for (const KinetoTrace& t : traces) {
      exported = exported || !t.memwall_ops.empty();
      if (t.memwall_dag.is_object() && t.memwall_dag.contains("step"))
        step = t.memwall_dag["step"];
    }
    recorded = exported ? spec.cluster.node.gpu : recorded_gpu(spec, traces);
    // What the window holds: torch.profiler's steps (ProfilerStep#N, once each), the
    // ranks, and whether the allocator's events were recorded.
    std::set<uint32_t> steps;
    for (const TraceCpuOp& c : traces.front().cpu_ops)
      if (traces.front().names[c.name].starts_with("ProfilerStep#"))
        steps.insert(c.name);
    profiler_steps = static_cast<int64_t>(steps.size());
    ranks          = spec.trace_ranks > 0 ? spec.trace_ranks
                                          : std::max<int64_t>(traces.front().world_size, static_cast<int64_t>(traces.size()));
    for (const KinetoTrace& t : traces)
      memory = memory || !t.memory.empty();
    TraceImport how;
    how.ranks    = spec.trace_ranks;
    how.same_gpu = recorded.id == spec.cluster.node.gpu.id;
    return import_traces(traces, spec.cluster, how);
  }();
  options.recorded_on        = std::make_shared<const GpuSpec>(recorded);
  RunResult r                = child ? replay_in_child(spec.cluster, dag, options) : replay(spec.cluster, dag, options);
  r.gpus                     = spec.cluster.total_gpus();
  r.recorded                 = recorded_kernels(dag, recorded, spec.cluster.node.gpu);
  r.recorded.ranks           = ranks;
  r.recorded.profiler_steps  = profiler_steps;
  r.recorded.memory_recorded = memory;
  r.model_flops_per_step     = dag.model_flops(); // an exported step's kernels carry theirs
  if (step.is_object()) {                         // and its section says what a step is
    if (step.contains("tokens_per_step") && step["tokens_per_step"].is_number() &&
        step["tokens_per_step"].get<double>() >= 0)
      r.tokens_per_step = step["tokens_per_step"].get<double>();
    if (step.contains("precision") && step["precision"].is_string())
      if (auto d = dtype_from_name(step["precision"].get<std::string>()))
        r.peak_flops_per_gpu = spec.cluster.node.gpu.peak(*d);
  }
  return r;
}

ReplayedStep replay_step(const ExperimentSpec& spec)
{
  if (spec.serving)
    throw InputError(spec.file + ": export writes a training step; a serving run makes its ops as it runs "
                                 "and is not exported (yet)");
  if (!spec.traces.empty())
    throw InputError(spec.file + ": this spec replays a trace already; export a training spec");
  if (spec.memory.enabled())
    throw InputError(
        spec.file +
        (spec.memory.explicit_through_allocator ? ": training.optimizer (a paged one)" : ": the memory section") +
        " puts tensors in unified memory, which is not exported (yet): their accesses have no place in a "
        "trace");
  ReplayOptions options;
  options.collective_algorithm = spec.collective_algorithm;
  ReplayedStep s{build_workload(spec, /*chains=*/false), {}};
  s.result = replay(spec.cluster, s.dag, options);
  return s;
}

// What the run assumed of an MoE model's routing (serving routes evenly).
static MoeRouting moe_routing(const ExperimentSpec& spec)
{
  MoeRouting m;
  if (!spec.model.moe.enabled())
    return m;
  ExpertLoad l      = expert_load(spec.model.moe, spec.serving ? spec.inference.ep : spec.training.ep, spec.serving);
  m.present         = true;
  m.experts_per_gpu = l.local_experts;
  m.busiest_share   = l.busiest_share;
  m.dropped_share   = l.dropped_share;
  return m;
}

// The profile the spec's GPU carries, named in the results.
static ProfileUsed profile_used(const ExperimentSpec& spec)
{
  ProfileUsed u;
  if (const GpuProfile* p = spec.cluster.node.gpu.profile.get()) {
    u.name   = p->name.empty() ? p->gpu : p->name;
    u.source = p->source;
    u.parts  = p->parts;
  }
  u.timing = timing_sources(spec.cluster.node.gpu);
  return u;
}

static RunResult simulate_any(const ExperimentSpec& spec, bool child, const SimulateOptions& how);

RunResult simulate(const ExperimentSpec& spec, bool child, const SimulateOptions& how)
{
  RunResult r = simulate_any(spec, child, how);
  r.profile   = profile_used(spec);
  // A trace replays on as many GPUs as it has ranks; a generated step on all of them.
  double gpus   = static_cast<double>(r.recorded.ranks > 0 ? r.recorded.ranks : spec.cluster.total_gpus());
  r.power_w     = spec.cluster.facility_power_w(gpus);
  r.gpu_power_w = spec.cluster.gpu_facility_power_w(gpus);
  r.usd_per_mwh = spec.cluster.usd_per_mwh;
  return r;
}

static RunResult simulate_any(const ExperimentSpec& spec, bool child, const SimulateOptions& how)
{
  ReplayOptions options;
  options.coalesce             = how.coalesce;
  options.mirror_orbits        = how.mirror_orbits;
  options.summary_records_only = !how.all_records;
  options.memory_timelines     = how.memory_timelines;
  options.collective_algorithm = spec.collective_algorithm;
  options.progress             = how.progress;
  options.memory               = spec.memory;
  if (spec.serving) {
    RunResult r = child ? in_child([&] { return serve(spec, options); }) : serve(spec, options);
    r.moe       = moe_routing(spec);
    return r;
  }
  if (!spec.traces.empty())
    return replay_traces(spec, child, options);
  // Repeated passes stored once when no output reads each op (unified memory reads
  // every kernel's own tensors).
  OpDag dag = build_workload(spec, how.chains && !how.all_records && !spec.memory.enabled());
  // Under unified memory the driver, not a framework's allocator, places what the step
  // holds, unless only a library's own managed buffers bypass the framework's allocator.
  if (!spec.memory.enabled() || spec.memory.explicit_through_allocator)
    options.allocator = AllocatorChoice::named(spec.training.allocator.empty() ? spec.training.stack->allocator()
                                                                               : spec.training.allocator);
  RunResult r            = child ? replay_in_child(spec.cluster, dag, options) : replay(spec.cluster, dag, options);
  r.model_flops_per_step = dag.model_flops();
  r.tokens_per_step      = spec.training.tokens_per_step();
  r.gpus                 = spec.cluster.total_gpus();
  r.peak_flops_per_gpu   = spec.cluster.node.gpu.peak(spec.training.precision);
  r.moe                  = moe_routing(spec);
  return r;
}

} // namespace memwall

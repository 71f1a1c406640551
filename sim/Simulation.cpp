#include "Simulation.hpp"

#include "ChildPool.hpp"
#include "InputError.hpp"
#include "StderrCapture.hpp"
#include "TrainingStepGenerator.hpp"
#include "inference/ServingDriver.hpp"
#include "trace/TraceImporter.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <functional>
#include <stdexcept>

namespace memwall {

OpDag build_workload(const ExperimentSpec& spec, bool chains)
{
  return TrainingStepGenerator(spec.model, spec.training, spec.cluster).generate(chains);
}

void start_engine()
{
  // Logging off before the Engine exists; exactness settings before the first zone.
  xbt_log_control_set("root.thres:critical");
  int argc         = 1;
  char name[]      = "memwall";
  char* argv[]     = {name, nullptr};
  static simgrid::s4u::Engine engine(&argc, argv);
  configure_exact_engine();
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
    Platform platform(cluster);
    Replayer replayer(dag, platform, options);
    return replayer.run();
  });
}

RunResult replay_in_child(const ClusterSpec& cluster, const OpDag& dag, const ReplayOptions& options)
{
  return in_child([&] { return replay(cluster, dag, options); });
}

RunResult serve(const ExperimentSpec& spec, const ReplayOptions& options)
{
  ServingDriver driver(spec.model, spec.inference, spec.cluster);
  RunResult r = with_simgrid_stderr_captured([&] {
    start_engine();
    Platform platform(spec.cluster);
    Replayer replayer(driver, platform, options);
    return replayer.run();
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

RunResult simulate(const ExperimentSpec& spec, bool child, const SimulateOptions& how)
{
  ReplayOptions options;
  options.coalesce             = how.coalesce;
  options.summary_records_only = !how.all_records;
  options.memory_timelines     = how.memory_timelines;
  options.collective_algorithm = spec.collective_algorithm;
  options.progress             = how.progress;
  options.memory               = spec.memory;
  if (spec.serving)
    return child ? in_child([&] { return serve(spec, options); }) : serve(spec, options);
  if (!spec.traces.empty()) {
    std::vector<KinetoTrace> traces;
    for (const std::string& f : spec.traces)
      traces.push_back(read_kineto_trace(f));
    OpDag dag   = import_traces(traces, spec.cluster);
    RunResult r = child ? replay_in_child(spec.cluster, dag, options) : replay(spec.cluster, dag, options);
    r.gpus      = spec.cluster.total_gpus();
    return r;
  }
  // Repeated passes stored once when no output reads each op (unified memory reads
  // every kernel's own tensors).
  OpDag dag = build_workload(spec, how.chains && !how.all_records && !spec.memory.enabled());
  RunResult r = child ? replay_in_child(spec.cluster, dag, options) : replay(spec.cluster, dag, options);
  r.model_flops_per_step = dag.model_flops();
  r.tokens_per_step    = spec.training.tokens_per_step();
  r.gpus               = spec.cluster.total_gpus();
  r.peak_flops_per_gpu = spec.cluster.node.gpu.peak(spec.training.precision);
  return r;
}

} // namespace memwall

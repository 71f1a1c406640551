#include "analysis/ChromeTraceWriter.hpp"
#include "analysis/Hdf5Writer.hpp"
#include "analysis/StepReport.hpp"
#include "app/cli/Commands.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"
#include "base/JsonOutput.hpp"
#include "sim/Simulation.hpp"
#include "workloads/inference/InferenceSection.hpp"
#include "workloads/model/ExpertLoad.hpp"
#include "workloads/training/TrainingSection.hpp"

#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>

namespace po = boost::program_options;

namespace memwall {

std::string hardware_description(const ExperimentSpec& s)
{
  const ClusterSpec& c = s.cluster;
  return std::to_string(c.nodes) + " x " + c.node.id + " (" + std::to_string(c.gpus_per_node) + " of " +
         std::to_string(c.node.gpus) + " x " + c.node.gpu.id + " per node)";
}

namespace {

// The Clos a multi-node spec describes, a line of the title ("" without tiers).
std::string fabric_description(const ClusterSpec& c)
{
  if (c.nodes <= 1 || c.tiers.empty())
    return "";
  std::string out = "\n  fabric tiers: ";
  for (size_t i = 0; i < c.tiers.size(); ++i) {
    const NetworkTier& t = c.tiers[i];
    char ratio[48]       = "";
    if (t.oversubscription != 1)
      std::snprintf(ratio, sizeof ratio, ", 1:%g up", t.oversubscription);
    out +=
        (i ? "; " : "") + t.name + " (" + std::to_string(t.nodes) + (t.nodes == 1 ? " node" : " nodes") + ratio + ")";
  }
  return out + (c.rail_optimized ? ", rail-optimised" : "");
}

} // namespace

std::string experiment_title(const ExperimentSpec& s)
{
  if (!s.traces.empty())
    return "memwall: replaying " + s.traces.front() +
           (s.traces.size() > 1 ? " and " + std::to_string(s.traces.size() - 1) + " more rank traces" : "") + " on " +
           std::to_string(s.cluster.nodes) + " x " + s.cluster.node.id + " (" + s.cluster.node.gpu.id +
           "; the ranks below, one GPU each)" +
           "\n  GPU work and host gaps from the trace, kernel times moved to this GPU by class (below)";
  if (s.serving) {
    const InferenceConfig& c = s.inference;
    std::string src          = c.source == "trace"   ? "trace " + c.trace_path
                               : c.source == "batch" ? "fixed batch"
                                                     : "Poisson arrivals";
    return "memwall: serving " + s.model.name + " on " + hardware_description(s) + fabric_description(s.cluster) +
           "\n  " + std::to_string(c.requests.size()) + " requests (" + src + "): " + describe_request_lengths(c) +
           "\n  " + describe_inference(c) +
           (s.model.moe.enabled() ? "\n  " + describe_expert_load(s.model.moe, c.ep, true) : std::string());
  }
  const TrainingConfig& t = s.training;
  return "memwall: training " + s.model.name + " on " + hardware_description(s) + fabric_description(s.cluster) +
         "\n  seq " + std::to_string(t.seq_len) + ", global batch " + std::to_string(t.global_batch) +
         ", micro batch " + std::to_string(t.micro_batch) + " (" + std::to_string(t.micro_batches()) +
         " per step)\n  " + describe_training(t) +
         (s.model.moe.enabled() ? "\n  " + describe_expert_load(s.model.moe, t.ep) : std::string());
}

bool parse_options(const std::vector<std::string>& args, const po::options_description& opts, const char* positional,
                   po::variables_map& vm, int max_count)
{
  po::positional_options_description pos;
  pos.add(positional, max_count);
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  // Help before the required options are checked: `VERB --help` needs none of them.
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

int run_command(const std::vector<std::string>& args)
{
  std::string spec_path, h5_path, trace_path, ops_text = "summary";
  std::vector<std::string> overrides;
  bool json = false;
  po::options_description opts("memwall run SPEC.yaml");
  opts.add_options()("help,h", "this help")("set", po::value(&overrides)->composing(),
                                            "override a spec key: --set training.micro_batch=4 (repeatable)")(
      "json", po::bool_switch(&json), "print one JSON object instead of the summary")("output,o", po::value(&h5_path),
                                                                                      "write the run to HDF5")(
      "ops", po::value(&ops_text),
      "with -o: none, summary (one row per kind of op, the default) or all (one row per op)")(
      "trace", po::value(&trace_path), "write a Chrome/Perfetto trace (JSON)")("spec", po::value(&spec_path),
                                                                               "experiment spec (YAML)");
  po::variables_map vm;
  if (!parse_options(args, opts, "spec", vm))
    return 0;
  if (spec_path.empty())
    throw InputError("run: missing SPEC.yaml (e.g. memwall run examples/gpt2-1gpu-a100.yaml)");

  // Every output checked before the simulation: an error after it would leave the
  // outputs written so far behind.
  check_output_path(h5_path, {spec_path});
  check_output_path(trace_path, {spec_path});
  check_distinct_outputs({{"-o", h5_path}, {"--trace", trace_path}});
  OpsTable ops        = ops_table_from("run: --ops", ops_text);
  ExperimentSpec spec = load_spec(spec_path, overrides);
  // Again, now that the spec's own inputs are read (its HF config, request trace,
  // profile, replayed traces); and held, so that no sweep writes them meanwhile.
  check_output_path(h5_path, {spec_path});
  check_output_path(trace_path, {spec_path});
  std::optional<OutputLock> h5_lock, trace_lock;
  if (!h5_path.empty())
    h5_lock.emplace(h5_path);
  if (!trace_path.empty())
    trace_lock.emplace(trace_path);
  // A record per op only for what reads them: --trace, and -o's ops table.
  bool every_op    = !trace_path.empty() || (!h5_path.empty() && ops != OpsTable::none);
  bool timelines   = !h5_path.empty() || !trace_path.empty();
  RunResult result = simulate(spec, /*in_child=*/false, {/*progress=*/true, /*coalesce=*/true, every_op, timelines});
  if (!h5_path.empty())
    write_run_hdf5(result, {spec.file, spec.text, hardware_description(spec), experiment_title(spec)}, h5_path, ops);
  if (!trace_path.empty())
    write_chrome_trace(result, trace_path);
  if (json)
    std::cout << json_text(report_json(result), 2) << "\n";
  else
    std::cout << report_text(result, experiment_title(spec));
  return 0;
}

} // namespace memwall

// memwall export SPEC.yaml -o STEP.json.gz: a training step's op DAG, replayed, written
// as PyTorch profiler traces (analysis/KinetoTraceWriter.hpp) that Perfetto opens and
// `workload: {trace: ...}` replays again.
#include "analysis/KinetoTraceWriter.hpp"
#include "app/cli/Commands.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"
#include "sim/Simulation.hpp"

#include <iostream>

namespace po = boost::program_options;

namespace memwall {

int export_command(const std::vector<std::string>& args)
{
  std::string spec_path, out_path;
  std::vector<std::string> overrides;
  po::options_description opts("memwall export SPEC.yaml -o STEP.json.gz");
  opts.add_options()("help,h", "this help")("set", po::value(&overrides)->composing(),
                                            "override a spec key: --set training.micro_batch=4 (repeatable)")(
      "output,o", po::value(&out_path), "trace to write (.json or .json.gz; one file per GPU: NAME.rankR.json.gz)")(
      "spec", po::value(&spec_path), "experiment spec (YAML)");
  po::variables_map vm;
  if (!parse_options(args, opts, "spec", vm))
    return 0;
  if (spec_path.empty())
    throw InputError("export: missing SPEC.yaml (e.g. memwall export examples/gpt2-1gpu-a100.yaml -o step.json.gz)");
  if (out_path.empty())
    throw InputError("export: missing -o STEP.json.gz");
  if (out_path.find(".json") == std::string::npos)
    throw InputError("export: " + out_path + ": name the output .json or .json.gz");
  check_output_path(out_path, {spec_path});
  ExperimentSpec spec = load_spec(spec_path, overrides);
  check_output_path(out_path, {spec_path}); // nor the spec's own inputs, now read
  ReplayedStep step = replay_step(spec);
  nlohmann::json about{{"tokens_per_step", spec.training.tokens_per_step()},
                       {"precision", dtype_name(spec.training.precision)}};
  for (const std::string& f : write_kineto_traces(step.dag, step.result, spec.cluster.node.gpu.id, out_path, about))
    std::cout << f << "\n";
  return 0;
}

} // namespace memwall

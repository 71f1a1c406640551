// memwall advise SPEC.yaml [--set KEY=VALUE]... [-j N] [--json]
#include "app/advise/AdviceReport.hpp"
#include "app/cli/Commands.hpp"
#include "base/InputError.hpp"
#include "base/JsonOutput.hpp"

#include <boost/program_options.hpp>

#include <iostream>

namespace po = boost::program_options;

namespace memwall {

int advise_command(const std::vector<std::string>& args)
{
  std::string spec_path;
  std::vector<std::string> overrides, ttft, tpot;
  int jobs  = 0;
  bool json = false;
  po::options_description opts("memwall advise SPEC.yaml");
  opts.add_options()("help,h", "this help")("set", po::value(&overrides)->composing(),
                                            "override a spec key: --set training.micro_batch=4 (repeatable)")(
      "jobs,j", po::value(&jobs), "replays run at once (default: the cores available)")(
      "json", po::bool_switch(&json), "print one JSON object instead of the report")(
      "ttft", po::value(&ttft)->composing(), "serving: a time to first token target, STAT=DURATION (mean|p50|p90|p99)")(
      "tpot", po::value(&tpot)->composing(), "serving: a time per output token target, STAT=DURATION")(
      "spec", po::value(&spec_path), "experiment spec (YAML)");
  po::variables_map vm;
  if (!parse_options(args, opts, "spec", vm))
    return 0;
  if (spec_path.empty())
    throw InputError(
        "advise: missing SPEC.yaml (e.g. memwall advise examples/gpt2-1gpu-a100.yaml --set training.micro_batch=64)");
  if (vm.count("jobs") && jobs < 1)
    throw InputError("advise: -j must be at least 1");
  if (jobs == 0)
    jobs = cores_available();
  std::vector<LatencyTarget> targets = parse_latency_targets(ttft, tpot);
  ExperimentSpec spec                = load_spec(spec_path, overrides); // the given spec must be valid
  if (!targets.empty() && !spec.serving)
    throw InputError("advise: --ttft and --tpot are serving targets; " + spec_path + " trains");
  Advice a = advise(spec, spec_path, overrides, jobs,
                    [&](const ExperimentSpec& s, const RunResult& r) { return measure_try(s, r, targets); });
  if (json)
    std::cout << json_text(advice_json(a), 2) << "\n";
  else
    std::cout << advice_text(a, spec_path, experiment_title(spec));
  return 0;
}

} // namespace memwall

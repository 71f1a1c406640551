// memwall optimize SPEC.yaml [--gpus N | --gpus-range A:B] [--objective time|cost|energy|tokens_per_dollar]
//                            [--top K] [-o RESULTS.h5 [--resume]] [-j N] [--axis KEY=V1,V2]... [--set KEY=VALUE]...
// memwall optimize A.yaml B.yaml ... --compare [-o COMPARE.h5] [--plot COMPARE.png] [--tokens N] ...
// The best layouts of the spec's training job on its hardware (LayoutSearch.hpp): every
// layout the axes propose, checked, pruned by the memory floor, the rest replayed as a
// sweep; the report of OptimizeReport.hpp.
#include "app/cli/Commands.hpp"
#include "app/optimize/MachineComparison.hpp"
#include "app/sweep/SweepSession.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"
#include "base/JsonOutput.hpp"
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

namespace po = boost::program_options;

namespace memwall {
namespace {

// Where the results go when no -o is given: a private file, removed at the end.
class ScratchResults {
public:
  ScratchResults()
  {
    std::string dir  = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string name = dir + "/memwall-optimize-XXXXXX";
    std::vector<char> buf(name.begin(), name.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    if (fd < 0)
      throw std::runtime_error("optimize: cannot create a scratch results file in " + dir);
    close(fd);
    path_ = buf.data();
  }
  ~ScratchResults() { std::filesystem::remove(path_); }
  ScratchResults(const ScratchResults&)            = delete;
  ScratchResults& operator=(const ScratchResults&) = delete;
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

// One spec's search, planned and replayed into `path` (kept rows first with --resume).
// False when interrupted.
bool search(const OptimizeRequest& request, const std::string& path, bool resume, int jobs, SearchedMachine& out)
{
  auto start = std::chrono::steady_clock::now();
  out.plan   = plan_search(request);
  if (out.plan.sweep.points.empty())
    return true;
  std::map<int64_t, SweepRow> rows;
  SweepFileInfo info;
  if (resume && std::filesystem::exists(path))
    rows = rows_to_resume(path, out.plan.sweep, info);
  else
    info.started_at = timestamp_now();
  const size_t kept = rows.size();
  MpiWorld world;
  if (!run_sweep_points(path, out.plan.sweep, rows, info, jobs, world)) {
    std::cerr << "memwall optimize: interrupted; " << rows.size() << " of " << out.plan.sweep.points.size()
              << " layouts of " << request.spec_path << " replayed (run again with -o and --resume)\n";
    return false;
  }
  // The time goes to stderr: stdout is the same for the same input.
  double seconds        = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double replayed = static_cast<double>(out.plan.sweep.points.size() - kept);
  std::cerr << "memwall optimize: " << request.spec_path << ": " << out.plan.enumerated << " layouts planned, "
            << (kept > 0 ? std::to_string(kept) + " kept from " + path + " and " : std::string()) << replayed
            << " replayed in " << format_duration(seconds) << " ("
            << format_number(std::round(replayed / seconds * 10) / 10) << " layouts/s, " << jobs << " at once)\n";
  out.table = read_sweep_file(path);
  return true;
}

// Where a compared spec's whole search goes beside the comparison file: OUT-STEM.h5.
std::string search_path(const std::string& out, const std::string& name)
{
  std::filesystem::path p(out);
  return (p.parent_path() / (p.stem().string() + "-" + name + ".h5")).string();
}

} // namespace

int optimize_command(const std::vector<std::string>& args)
{
  OptimizeRequest request;
  std::string out_path, range, plot_path, objective_name = "time";
  std::vector<std::string> specs, axes;
  int64_t gpus = 0;
  int jobs = 0, top = 5;
  bool resume = false, dry_run = false, compare = false, json = false;
  po::options_description opts("memwall optimize SPEC.yaml");
  opts.add_options()("help,h", "this help")("gpus", po::value(&gpus), "search on N GPUs of the spec's node")(
      "gpus-range", po::value(&range), "search on A, 2A, 4A, ... up to B GPUs (A:B)")(
      "objective", po::value(&objective_name), "time (default), cost ($ per step), energy, tokens_per_dollar")(
      "top", po::value(&top), "layouts in the ranking (default 5)")(
      "output,o", po::value(&out_path),
      "results file (HDF5, a sweep's): every replayed layout; with --compare the comparison")(
      "resume", po::bool_switch(&resume), "keep the layouts RESULTS.h5 holds, replay the rest")(
      "jobs,j", po::value(&jobs), "layouts replayed at once (default: the cores available)")(
      "axis", po::value(&axes), "KEY=V1,V2,...: the values to try for a layout key (memwall list layout-axes)")(
      "set", po::value(&request.overrides), "KEY=VALUE: change the spec first (as memwall run --set)")(
      "years", po::value(&request.amortization_years), "years the hardware's price is spread over (default 4)")(
      "tokens", po::value(&request.tokens), "a training budget in tokens: days and dollars to train")(
      "dry-run", po::bool_switch(&dry_run), "print the counts and the generated sweep; replay nothing")(
      "json", po::bool_switch(&json),
      "the report as one JSON object; with --dry-run, a list of each spec's counts and sweep")(
      "compare", po::bool_switch(&compare), "several specs (machines): each one's best layout, one table")(
      "plot", po::value(&plot_path), "--compare: days (with --tokens) or step time against price, as PNG")(
      "spec", po::value(&specs), "experiment spec (YAML) with a training section; several with --compare");
  po::variables_map vm;
  if (!parse_options(args, opts, "spec", vm, -1))
    return 0;
  if (specs.empty())
    throw InputError("optimize: missing SPEC.yaml (e.g. memwall optimize examples/gpt3-175b-tp8-pp8-interleaved-"
                     "8xdgx-a100.yaml --gpus 1024)");
  if (specs.size() > 1 && !compare)
    throw InputError("optimize: several specs compare machines: add --compare");
  if (compare && specs.size() < 2)
    throw InputError("optimize: --compare needs two specs or more (one per machine)");
  if (json && compare)
    throw InputError("optimize: --json reports one spec's search; --compare writes its comparison with -o");
  if (!plot_path.empty() && !compare)
    throw InputError("optimize: --plot draws a --compare");
  if (!plot_path.empty() && std::filesystem::path(plot_path).extension() != ".png")
    throw InputError("optimize: --plot " + plot_path + ": the picture is PNG; name it *.png");
  if (vm.count("gpus") && vm.count("gpus-range"))
    throw InputError("optimize: give --gpus or --gpus-range, not both");
  if (vm.count("gpus") && (gpus < 1 || gpus > 1'000'000))
    throw InputError("optimize: --gpus must be a whole number from 1 to 1e6");
  if (vm.count("jobs") && jobs < 1)
    throw InputError("optimize: -j must be at least 1");
  if (top < 1)
    throw InputError("optimize: --top must be at least 1");
  if (!(request.amortization_years > 0 && request.amortization_years <= 100))
    throw InputError("optimize: --years must be above 0 and at most 100");
  if (!(request.tokens >= 0 && request.tokens <= 1e18))
    throw InputError("optimize: --tokens must be from 0 to 1e18");
  if (resume && out_path.empty())
    throw InputError("optimize: --resume needs -o RESULTS.h5");
  Objective objective = objective_named(objective_name);
  request.axes        = parse_axis_options(axes);
  if (vm.count("gpus"))
    request.gpu_counts = {gpus};
  else if (!range.empty())
    request.gpu_counts = gpu_range(range);
  if (jobs == 0)
    jobs = cores_available();

  if (dry_run) {
    nlohmann::ordered_json plans = nlohmann::ordered_json::array(); // --json: one object per spec, as the report's
    for (const std::string& spec : specs) {
      request.spec_path = spec;
      SearchPlan plan   = plan_search(request);
      if (json) {
        plans.push_back({{"spec", spec},
                         {"enumerated", plan.enumerated},
                         {"invalid", plan.invalid},
                         {"invalid_by_key", plan.invalid_by_key},
                         {"cannot_fit", plan.cannot_fit},
                         {"to_replay", plan.sweep.points.size()},
                         {"sweep", plan.sweep_yaml}});
        continue;
      }
      std::cout << plan.enumerated << " layouts enumerated, " << plan.invalid << " invalid, " << plan.cannot_fit
                << " cannot fit, " << plan.sweep.points.size() << " to replay\n"
                << plan.sweep_yaml;
    }
    if (json)
      std::cout << json_text(plans, 2) << "\n";
    return 0;
  }
  // Every output is checked against every input and against the others, and locked,
  // before anything runs; a spec's search goes to -o, or beside the comparison.
  std::vector<std::string> outputs;
  for (const std::string& spec : specs)
    outputs.push_back(out_path.empty() ? std::string()
                      : compare        ? search_path(out_path, std::filesystem::path(spec).stem().string())
                                       : out_path);
  std::vector<std::pair<std::string, std::string>> named;
  for (size_t i = 0; i < specs.size(); ++i)
    if (!outputs[i].empty())
      named.emplace_back(compare ? "the search of " + specs[i] : "-o", outputs[i]);
  if (compare && !out_path.empty())
    named.emplace_back("-o", out_path);
  if (!plot_path.empty())
    named.emplace_back("--plot", plot_path);
  check_distinct_outputs(named);
  std::vector<std::unique_ptr<OutputLock>> locks;
  for (const auto& [what, path] : named) {
    check_output_path(path, specs);
    locks.push_back(std::make_unique<OutputLock>(path));
  }
  std::vector<SearchedMachine> machines;
  std::vector<std::unique_ptr<ScratchResults>> scratch;
  for (size_t i = 0; i < specs.size(); ++i) {
    request.spec_path = specs[i];
    SearchedMachine m;
    m.name = std::filesystem::path(specs[i]).stem().string();
    if (outputs[i].empty())
      scratch.push_back(std::make_unique<ScratchResults>());
    const std::string& path = outputs[i].empty() ? scratch.back()->path() : outputs[i];
    if (!search(request, path, resume, jobs, m))
      return 130;
    for (const auto& [what, out] : named)
      check_output_path(out, specs); // and whatever the specs read
    machines.push_back(std::move(m));
  }
  if (!compare) {
    const SearchedMachine& m = machines.front();
    if (m.plan.sweep.points.empty() && !json) {
      std::cout << "memwall optimize: " << m.plan.enumerated << " layouts enumerated, " << m.plan.invalid
                << " invalid, " << m.plan.cannot_fit
                << " cannot fit (model states alone exceed the GPU): none to replay\n";
      return 0;
    }
    OptimizeReportOptions report{objective, static_cast<size_t>(top), out_path};
    if (json)
      std::cout << json_text(optimize_report_json(m.plan, m.table, report), 2) << "\n";
    else
      std::cout << optimize_report_text(m.plan, m.table, report);
    return 0;
  }
  std::vector<ComparedRow> rows = compared_rows(machines, objective);
  std::cout << comparison_text(machines, rows, objective);
  if (!out_path.empty() || !plot_path.empty()) {
    std::unique_ptr<ScratchResults> file;
    if (out_path.empty())
      file = std::make_unique<ScratchResults>();
    const std::string& path = out_path.empty() ? file->path() : out_path;
    write_comparison_file(path, machines, rows);
    if (!out_path.empty())
      std::cout << "\n  the comparison: " << out_path << " (memwall report, memwall plot --lines machine); each "
                << "machine's search: " << search_path(out_path, "MACHINE") << "\n";
    if (!plot_path.empty() && !rows.empty()) {
      bool days = machines[rows.front().machine].table.numbers.count("days_to_train") > 0;
      return plot_command({path, "-o", plot_path, "--x", "hardware_cost_usd", "--y",
                           days ? "days_to_train" : "step_time_s", "--lines", "machine"});
    }
  }
  return 0;
}

} // namespace memwall

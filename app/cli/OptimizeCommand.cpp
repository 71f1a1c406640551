// memwall optimize SPEC.yaml [--gpus N | --gpus-range A:B] [--objective time|cost|energy|tokens_per_dollar]
//                            [--top K] [-o RESULTS.h5 [--resume]] [-j N] [--axis KEY=V1,V2]... [--set KEY=VALUE]...
// The best layouts of the spec's training job on its hardware (LayoutSearch.hpp): every
// layout the axes propose, checked, pruned by the memory floor, the rest replayed as a
// sweep; the report of OptimizeReport.hpp.
#include "app/cli/Commands.hpp"
#include "app/optimize/OptimizeReport.hpp"
#include "app/sweep/SweepSession.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"

#include <boost/program_options.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

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

} // namespace

int optimize_command(const std::vector<std::string>& args)
{
  OptimizeRequest request;
  std::string out_path, range, objective_name = "time";
  int64_t gpus = 0;
  int jobs = 0, top = 5;
  bool resume = false, dry_run = false;
  std::vector<std::string> axes;
  po::options_description opts("memwall optimize SPEC.yaml");
  opts.add_options()("help,h", "this help")("gpus", po::value(&gpus), "search on N GPUs of the spec's node")(
      "gpus-range", po::value(&range), "search on A, 2A, 4A, ... up to B GPUs (A:B)")(
      "objective", po::value(&objective_name), "time (default), cost ($ per step), energy, tokens_per_dollar")(
      "top", po::value(&top), "layouts in the ranking (default 5)")(
      "output,o", po::value(&out_path), "results file (HDF5, a sweep's): every replayed layout")(
      "resume", po::bool_switch(&resume), "keep the layouts RESULTS.h5 holds, replay the rest")(
      "jobs,j", po::value(&jobs), "layouts replayed at once (default: the cores available)")(
      "axis", po::value(&axes), "KEY=V1,V2,...: the values to try for a layout key (memwall list layout-axes)")(
      "set", po::value(&request.overrides), "KEY=VALUE: change the spec first (as memwall run --set)")(
      "years", po::value(&request.amortization_years), "years the hardware's price is spread over (default 4)")(
      "tokens", po::value(&request.tokens), "a training budget in tokens: days and dollars to train")(
      "dry-run", po::bool_switch(&dry_run), "print the counts and the generated sweep; replay nothing")(
      "spec", po::value(&request.spec_path), "experiment spec (YAML) with a training section");
  po::variables_map vm;
  if (!parse_options(args, opts, "spec", vm))
    return 0;
  if (request.spec_path.empty())
    throw InputError("optimize: missing SPEC.yaml (e.g. memwall optimize examples/gpt3-175b-tp8-pp8-interleaved-"
                     "8xdgx-a100.yaml --gpus 1024)");
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

  auto start = std::chrono::steady_clock::now();
  std::optional<OutputLock> lock;
  if (!out_path.empty()) {
    check_output_path(out_path, {request.spec_path});
    lock.emplace(out_path);
  }
  SearchPlan plan = plan_search(request);
  if (!out_path.empty())
    check_output_path(out_path, {request.spec_path}); // and whatever the spec read
  if (dry_run) {
    std::cout << plan.enumerated << " layouts enumerated, " << plan.invalid << " invalid, " << plan.cannot_fit
              << " cannot fit, " << plan.sweep.points.size() << " to replay\n"
              << plan.sweep_yaml;
    return 0;
  }
  std::optional<ScratchResults> scratch;
  if (out_path.empty())
    scratch.emplace();
  const std::string& path = out_path.empty() ? scratch->path() : out_path;
  OptimizeReportOptions report{objective, static_cast<size_t>(top), out_path};
  if (plan.sweep.points.empty()) {
    std::cout << "memwall optimize: " << plan.enumerated << " layouts enumerated, " << plan.invalid << " invalid, "
              << plan.cannot_fit << " cannot fit (model states alone exceed the GPU): none to replay\n";
    return 0;
  }
  std::map<int64_t, SweepRow> rows;
  SweepFileInfo info;
  if (resume && std::filesystem::exists(out_path))
    rows = rows_to_resume(out_path, plan.sweep, info);
  else
    info.started_at = timestamp_now();
  const size_t kept = rows.size();
  MpiWorld world;
  if (!run_sweep_points(path, plan.sweep, rows, info, jobs, world)) {
    std::cerr << "memwall optimize: interrupted; " << rows.size() << " of " << plan.sweep.points.size()
              << " layouts replayed"
              << (out_path.empty() ? std::string() : " in " + out_path + " (run again with --resume)") << "\n";
    return 130;
  }
  // The time goes to stderr: stdout is the same for the same input.
  double seconds        = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double replayed = static_cast<double>(plan.sweep.points.size() - kept);
  std::cerr << "memwall optimize: " << plan.enumerated << " layouts planned, "
            << (kept > 0 ? std::to_string(kept) + " kept from " + path + " and " : std::string()) << replayed
            << " replayed in " << format_duration(seconds) << " ("
            << format_number(std::round(replayed / seconds * 10) / 10) << " layouts/s, " << jobs << " at once)\n";
  std::cout << optimize_report_text(plan, read_sweep_file(path), report);
  return 0;
}

} // namespace memwall

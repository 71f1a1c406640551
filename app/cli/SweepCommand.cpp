// memwall sweep SWEEP.yaml -o RESULTS.h5 [-j N] [--resume]
// Under `mpirun -n N` (an MPI build): rank 0 writes RESULTS.h5, the other ranks run the
// points, -j at once each (default 1: one rank per core is mpirun's business).
#include "app/cli/Commands.hpp"
#include "app/sweep/MpiWorld.hpp"
#include "app/sweep/SweepFile.hpp"
#include "app/sweep/SweepSession.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"

#include <boost/program_options.hpp>

#include <optional>
#include <sched.h>
#include <set>

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace po = boost::program_options;

namespace memwall {
namespace {

// What the points read, for the output never to replace it: the base spec's own inputs
// (its HF config, profile, request or profiler traces: read by parsing the first point,
// which the children do again; a point that is bad input is the row's error, not the
// sweep's), and every axis value that names a file.
std::vector<std::string> sweep_inputs(const SweepSpec& sweep, const std::string& sweep_path)
{
  std::vector<std::string> inputs{sweep_path};
  try {
    point_spec(sweep, sweep.points.front());
  } catch (const InputError&) {
  }
  std::set<std::string> seen;
  for (const SweepPoint& p : sweep.points)
    for (const SweepSetting& st : p.settings) {
      if (!seen.insert(st.text).second)
        continue;
      std::error_code ec;
      for (const std::filesystem::path& f :
           {std::filesystem::path(st.text), std::filesystem::path(sweep.base_dir) / st.text})
        if (!st.text.empty() && std::filesystem::is_regular_file(f, ec))
          inputs.push_back(f.string());
    }
  return inputs;
}

} // namespace
int cores_available()
{
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return CPU_COUNT(&set);
  return 1;
}

int sweep_command(const std::vector<std::string>& args)
{
  std::string sweep_path, out_path;
  int jobs    = 0;
  bool resume = false, dry_run = false;
  po::options_description opts("memwall sweep SWEEP.yaml -o RESULTS.h5");
  opts.add_options()("help,h", "this help")("output,o", po::value(&out_path), "results file (HDF5)")(
      "jobs,j", po::value(&jobs), "points run at once (default: the cores available)")(
      "resume", po::bool_switch(&resume), "keep the points RESULTS.h5 holds, run the rest")(
      "dry-run", po::bool_switch(&dry_run), "list the points (index and settings) and stop; nothing runs")(
      "sweep", po::value(&sweep_path), "sweep spec (YAML)");
  po::variables_map vm;
  if (!parse_options(args, opts, "sweep", vm))
    return 0;
  if (sweep_path.empty())
    throw InputError(
        "sweep: missing SWEEP.yaml (e.g. memwall sweep examples/sweeps/gpt2-xl-layouts-dgx-a100.yaml -o results.h5)");
  MpiWorld world;
  if (dry_run) {
    // Checks the spec as a real sweep would (axis keys, filter), without running.
    if (world.rank() > 0)
      return 0;
    SweepSpec sweep = load_sweep(sweep_path);
    check_sweep_metrics(sweep);
    for (const SweepPoint& p : sweep.points) {
      std::cout << p.index << ":";
      for (const SweepSetting& st : p.settings)
        std::cout << " " << st.key << "=" << st.text;
      std::cout << "\n";
    }
    std::cout << sweep.points.size() << " points\n";
    return 0;
  }
  if (out_path.empty())
    throw InputError("sweep: missing -o RESULTS.h5");
  if (vm.count("jobs") && jobs < 1)
    throw InputError("sweep: -j must be at least 1");
  if (jobs == 0)
    jobs = world.size() > 1 ? 1 : cores_available();
  if (world.rank() > 0) {
    // Rank 0 reports bad input; the others stop with its exit code.
    if (int status = world.broadcast_status(0); status != 0)
      return status;
    SweepSpec sweep = load_sweep(sweep_path);
    world.serve_points(sweep, jobs, summarize_point);
    return 0;
  }

  SweepSpec sweep;
  SweepFileInfo info;
  std::map<int64_t, SweepRow> rows;
  std::optional<OutputLock> lock; // two sweeps writing one file: one's results vanished
  try {
    check_output_path(out_path, {sweep_path});
    lock.emplace(out_path);
    sweep = load_sweep(sweep_path);
    check_output_path(out_path, sweep_inputs(sweep, sweep_path)); // and its base spec's, now read
    check_sweep_metrics(sweep);
    if (resume && std::filesystem::exists(out_path)) {
      rows = rows_to_resume(out_path, sweep, info);
    } else
      info.started_at = timestamp_now();
  } catch (const InputError& e) {
    if (world.size() == 1)
      throw;
    // The line goes out before the other ranks hear the status: once one of them exits
    // with 2, mpirun ends the job, rank 0 with it, whatever it had still to write.
    std::fprintf(stderr, "%s\n", one_line("memwall: " + std::string(e.what())).c_str());
    std::fflush(stderr);
    world.broadcast_status(2);
    return 2;
  }
  world.broadcast_status(0);
  if (!run_sweep_points(out_path, sweep, rows, info, jobs, world)) {
    std::cerr << "memwall sweep: interrupted; " << rows.size() << " of " << sweep.points.size() << " points in "
              << out_path << " (run again with --resume)\n";
    if (world.size() > 1)
      world.abort(130); // the other ranks wait for points that will not come
    return 130;
  }
  size_t failed = 0;
  for (const auto& [i, r] : rows)
    failed += r.error.empty() ? 0 : 1;
  std::cout << "memwall sweep: " << rows.size() << " points (" << failed << " with errors) in " << out_path << "\n";
  return 0;
}

} // namespace memwall

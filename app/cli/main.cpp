// memwall: discrete-event simulation of the GPU memory hierarchy for LLM training and
// inference. `memwall <command> [options]`; `memwall help` lists the commands.
#include "analysis/Hdf5Writer.hpp"
#include "app/cli/Commands.hpp"
#include "base/InputError.hpp"

#include <boost/program_options/errors.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <new>

namespace {

struct Command {
  const char* summary;
  std::function<int(const std::vector<std::string>&)> run;
};

const std::map<std::string, Command>& commands()
{
  static const std::map<std::string, Command> table{
      {"run",
       {"simulate one experiment spec: memwall run SPEC.yaml [--set KEY=VALUE]... [--json] [-o RUN.h5] [--trace "
        "RUN.json]",
        memwall::run_command}},
      {"sweep",
       {"run a parameter sweep into one HDF5 file: memwall sweep SWEEP.yaml -o RESULTS.h5 [-j N] [--resume]",
        memwall::sweep_command}},
      {"report",
       {"print the best points, the ones that do not fit and the errors of a sweep, or a run's summary: "
        "memwall report RESULTS.h5|RUN.h5 [--by METRIC] [--top N]",
        memwall::report_command}},
      {"plot",
       {"draw a run's memory over time, or a sweep's metric against an axis or its fits map, as PNG: "
        "memwall plot RESULTS.h5|RUN.h5 -o OUT.png [--kind memory|metric|fits] [--x AXIS] [--y COLUMN]",
        memwall::plot_command}},
      {"advise",
       {"when a spec does not fit (or a server drops, preempts, falls behind or misses a target), simulate the "
        "standard remedies cheapest first: "
        "memwall advise SPEC.yaml [--set KEY=VALUE]... [--ttft p90=2s] [--tpot p90=100ms] [--json]",
        memwall::advise_command}},
      {"optimize",
       {"the best parallel layouts of a training job, every valid one replayed: memwall optimize SPEC.yaml "
        "[--gpus N | --gpus-range A:B] [--objective time|cost|energy|tokens_per_dollar] [--top K] [-o RESULTS.h5] "
        "[-j N]",
        memwall::optimize_command}},
      {"serve-capacity",
       {"the highest Poisson arrival rate a server sustains within latency targets, simulated: "
        "memwall serve-capacity SPEC.yaml [--ttft p90=2s] [--tpot p90=100ms] [--set KEY=VALUE]... [--json]",
        memwall::serve_capacity_command}},
      {"list",
       {"list presets, parameters and implementations: memwall list gpus|nodes|models|params|implementations, or "
        "one concern's implementations (memwall list names every subject)",
        memwall::list_command}},
      {"export",
       {"write a training step's replayed op DAG as PyTorch profiler traces (Perfetto, HTA; replayable "
        "with workload.trace): memwall export SPEC.yaml -o STEP.json.gz [--set KEY=VALUE]...",
        memwall::export_command}},
      {"calibrate",
       {"measure a GPU, import published measurements, fit and check hardware profiles: "
        "memwall calibrate measure|import|fit|check ...",
        memwall::calibrate_command}},
  };
  return table;
}

int usage(FILE* out)
{
  std::fprintf(out, "usage: memwall <command> [options]   (memwall --version: the version)\n\ncommands:\n");
  for (const auto& [name, c] : commands())
    std::fprintf(out, "  %-9s %s\n", name.c_str(), c.summary);
  if (out == stdout && (std::fflush(stdout) != 0 || std::ferror(stdout))) {
    std::fprintf(stderr, "memwall: runtime failure: writing to standard output failed (disk full?)\n");
    return 3;
  }
  return out == stderr ? 2 : 0;
}

// One line on stderr, then out without static destructors: an error thrown mid-replay
// leaves SimGrid activities pending, and SimGrid's destructors crash on them (exit 139
// instead of the documented code).
int fail(int code, const std::string& message)
{
  std::fprintf(stderr, "%s\n", memwall::one_line(message).c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

} // namespace

int main(int argc, char** argv)
{
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, which every output path
  // turns into one line and a removed temporary file, instead of SIGXFSZ killing the
  // process mid-write with its temporary and lock files left behind.
  ::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2)
    return usage(stderr);
  std::string name = argv[1];
  if (name == "help" || name == "--help" || name == "-h")
    return usage(stdout);
  if (name == "--version" || name == "version") {
    std::printf("memwall %s (commit %s)\n", memwall::memwall_version().c_str(), memwall::memwall_git_commit().c_str());
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
      return fail(3, "memwall: runtime failure: writing to standard output failed (disk full?)");
    return 0;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    std::fprintf(stderr, "memwall: unknown command '%s'; see memwall help for the commands\n", name.c_str());
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    int code = it->second.run(args);
    // A report written to a full disk (--json > /dev/full) is a failure, not exit 0.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout))
      return fail(3, "memwall: runtime failure: writing to standard output failed (disk full?)");
    return code;
  } catch (const memwall::InputError& e) {
    return fail(2, "memwall: " + std::string(e.what()));
  } catch (const boost::program_options::error& e) {
    return fail(2, "memwall " + name + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return fail(3, "memwall: runtime failure: out of host memory (a memory limit such as ulimit -v, or a simulation "
                   "near the limits in `memwall list params`: a smaller micro-batch count or cluster needs less)");
  } catch (const std::exception& e) {
    return fail(3, "memwall: runtime failure: " + std::string(e.what()));
  }
}

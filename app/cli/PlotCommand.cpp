// memwall plot RESULTS.h5|RUN.h5 -o OUT.png [--kind memory|metric|fits|ranking] [--x AXIS]
//   [--y METRIC|AXIS] [--lines AXIS] [--point INDEX] [--device NAME]
// The pictures are drawn by analysis/plot_results.py with matplotlib: this command checks
// the file is memwall's, finds the script and a Python that has matplotlib and h5py, and
// passes the options on.
#include "analysis/ResultsFile.hpp"
#include "app/cli/Commands.hpp"
#include "app/sweep/ResultsFilter.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"

#include <boost/program_options.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace memwall {
namespace {

// MEMWALL_PLOT_SCRIPT, else the copy beside the binary, else the source tree's.
std::string plot_script()
{
  if (const char* s = std::getenv("MEMWALL_PLOT_SCRIPT"))
    return s;
  std::error_code ec;
  fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "plot_results.py";
  if (!ec && fs::exists(beside))
    return beside.string();
  return std::string(MEMWALL_SOURCE_DIR) + "/analysis/plot_results.py";
}

// MEMWALL_PYTHON, else Debian's interpreter (where apt put matplotlib and h5py, whatever
// python3 comes first on PATH), else python3 from PATH.
std::string python()
{
  if (const char* p = std::getenv("MEMWALL_PYTHON"))
    return p;
  return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

} // namespace

int plot_command(const std::vector<std::string>& args)
{
  std::string path, out, kind, x, y, lines, device, filter;
  int point = -1;
  po::options_description opts("memwall plot RESULTS.h5|RUN.h5 -o OUT.png");
  opts.add_options()("help,h", "this help")("output,o", po::value(&out), "the picture (PNG)")(
      "kind", po::value(&kind),
      "memory (a run's memory over time; default for run files), metric (a sweep's metric "
      "against an axis; default for sweeps), fits (a sweep's fits map over two axes) or ranking (a search's "
      "best layouts, where each step goes; default for memwall optimize files)")(
      "x", po::value(&x), "metric/fits: the axis across (default: the first axis)")(
      "y", po::value(&y),
      "metric: the column plotted (default step_time_s, serving output_tokens_per_s); fits: the "
      "axis up (default: the second axis)")(
      "lines", po::value(&lines), "metric: one line per value of this axis (default: the next axis; '' for one line)")(
      "point", po::value(&point), "memory of a sweep: the point's index (recorded with record: {memory: true})")(
      "device", po::value(&device), "memory: only this device (e.g. node0.gpu0)")(
      "filter", po::value(&filter),
      "metric/fits: only the points where this expression holds, as memwall report --filter takes it")(
      "file", po::value(&path), "a results file of memwall sweep or memwall run -o");
  po::variables_map vm;
  if (!parse_options(args, opts, "file", vm))
    return 0;
  if (path.empty())
    throw InputError("plot: missing RESULTS.h5 (a file written by memwall sweep or memwall run -o)");
  if (out.empty())
    throw InputError("plot: missing -o OUT.png");
  if (fs::path(out).extension() != ".png")
    throw InputError("plot: -o " + out + ": the picture is PNG; name it *.png");
  fs::path dir = fs::path(out).parent_path();
  if (!dir.empty() && !fs::is_directory(dir))
    throw InputError("plot: -o " + out + ": no directory " + dir.string());
  if (!kind.empty() && kind != "memory" && kind != "metric" && kind != "fits" && kind != "ranking")
    throw InputError("plot: --kind " + kind + ": allowed are memory, metric, fits and ranking");
  check_output_path(out, {path});
  memwall_file_format(path); // one clear line for a file that is not memwall's

  std::vector<std::string> argv{python(), plot_script(), path, "-o", out};
  auto pass = [&](const char* name, const std::string& value) {
    if (vm.count(name)) {
      argv.push_back(std::string("--") + name);
      argv.push_back(value);
    }
  };
  pass("kind", kind);
  pass("x", x);
  pass("y", y);
  pass("lines", lines);
  pass("device", device);
  pass("point", std::to_string(point));
  if (!filter.empty()) { // evaluated here, in the one expression language; the script gets the rows
    if (memwall_file_format(path) == "memwall-run")
      throw InputError(path + ": a run file; --filter applies to sweep results files");
    ResultsTable t = read_sweep_file(path);
    std::string rows;
    for (size_t r : filtered_rows(t, filter, path + ": --filter"))
      rows += (rows.empty() ? "" : ",") + std::to_string(r);
    if (rows.empty())
      throw InputError(path + ": --filter " + filter + ": no point of this sweep matches");
    argv.push_back("--rows");
    argv.push_back(rows);
  }
  std::cout.flush();
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error("plot: fork failed");
  if (pid == 0) {
    std::vector<char*> c;
    for (std::string& a : argv)
      c.push_back(a.data());
    c.push_back(nullptr);
    execvp(c[0], c.data());
    std::cerr << "memwall plot: cannot start " << argv[0] << " (install python3, or set MEMWALL_PYTHON)\n";
    _exit(3);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status) == 2 ? 2 : WEXITSTATUS(status) == 0 ? 0 : 3;
  std::cerr << "memwall plot: the plotting process died (signal " << WTERMSIG(status) << ")\n";
  return 3;
}

} // namespace memwall

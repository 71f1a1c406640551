// memwall calibrate: the path from a real GPU (or published measurements) to a fitted
// hardware profile that the replay uses.
//   measure -o MEAS.csv                           run the CUDA microbenchmarks (needs a GPU)
//   import FORMAT FILE... --gpu ID -o MEAS.csv    other people's measurements, same CSV
//   fit MEAS.csv... [--gpu ID] -o PROFILE.yaml    fit every model the rows allow
//   check PROFILE.yaml MEAS.csv...                error per benchmark on (held-out) rows
#include "app/cli/Commands.hpp"
#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"
#include "base/TextFile.hpp"
#include "calibration/Measurement.hpp"
#include "calibration/fit/ProfileFit.hpp"
#include "calibration/importers/Importer.hpp"
#include "calibration/kernels/BenchGroups.hpp"
#include "hwmodels/Catalog.hpp"

#include <boost/program_options.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>

namespace po = boost::program_options;

namespace memwall {
namespace {

// The CUDA microbenchmark program, built beside memwall when nvcc was found.
std::string gpubench_path()
{
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return "";
  self[n] = 0;
  return (std::filesystem::path(self).parent_path() / "memwall-gpubench").string();
}

int measure(const std::vector<std::string>& args)
{
  po::options_description opts("memwall calibrate measure [options]");
  opts.add_options()("help,h", "this help")("output,o", po::value<std::string>()->required(),
                                            "measurement CSV to write")(
      "gpu", po::value<std::string>(), "catalog id of the GPU (default: recognised from the device name)")(
      "quick", "a smaller grid (a minute instead of several)")(
      "only", po::value<std::string>(),
      ("run only these groups, comma-separated (" + gpubench::bench_groups_joined() + ")").c_str());
  po::variables_map vm;
  if (!parse_options(args, opts, "output", vm))
    return 0;
  if (vm.count("only")) {
    std::string error;
    if (!gpubench::parse_bench_groups(vm["only"].as<std::string>(), error))
      throw InputError("calibrate measure --only: " + error + " (groups: " + gpubench::bench_groups_joined() + ")");
  }
  std::string bench = gpubench_path();
  if (bench.empty() || !std::filesystem::exists(bench))
    throw InputError("calibrate measure: this build has no GPU microbenchmarks (nvcc was not found when it was "
                     "configured); install the CUDA Toolkit and rebuild");
  std::string out  = vm["output"].as<std::string>();
  std::string temp = out + ".partial";
  std::vector<std::string> argv{bench, "-o", temp};
  if (vm.count("gpu"))
    argv.insert(argv.end(), {"--gpu", vm["gpu"].as<std::string>()});
  if (vm.count("quick"))
    argv.push_back("--quick");
  if (vm.count("only"))
    argv.insert(argv.end(), {"--only", vm["only"].as<std::string>()});
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> cargs;
    for (auto& a : argv)
      cargs.push_back(a.data());
    cargs.push_back(nullptr);
    ::execv(cargs[0], cargs.data());
    std::_Exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
  if (code != 0) {
    std::filesystem::remove(temp);
    if (code == 2)
      throw InputError("calibrate measure: memwall-gpubench measured nothing: no CUDA GPU here, or nothing the "
                       "groups asked for (its line above says which)");
    throw std::runtime_error("calibrate measure: the microbenchmarks failed (exit " + std::to_string(code) + ")");
  }
  read_measurements(temp); // what it wrote must read back
  std::filesystem::rename(temp, out);
  std::printf("memwall: measurements written to %s\n", out.c_str());
  return 0;
}

int import(const std::vector<std::string>& args)
{
  po::options_description opts(
      "memwall calibrate import FORMAT FILE... --gpu ID -o MEAS.csv (formats: memwall list importers)");
  opts.add_options()("help,h", "this help")("inputs", po::value<std::vector<std::string>>()->required(),
                                            "format, then the files")(
      "gpu", po::value<std::string>()->required(), "catalog id of the GPU measured (memwall list gpus)")(
      "output,o", po::value<std::string>()->required(), "measurement CSV to write");
  po::variables_map vm;
  if (!parse_options(args, opts, "inputs", vm, -1))
    return 0;
  auto inputs = vm["inputs"].as<std::vector<std::string>>();
  if (inputs.size() < 2)
    throw InputError("calibrate import: expected a format (memwall list importers) and at least one file");
  std::string gpu = vm["gpu"].as<std::string>();
  gpu_preset(gpu, "calibrate import --gpu");
  const ImportFn& fn = importer_registry().get(inputs[0]);
  std::vector<Measurement> rows;
  for (size_t i = 1; i < inputs.size(); ++i) {
    std::vector<Measurement> more = fn({inputs[i], read_text_file(inputs[i], "measurement file"), gpu});
    rows.insert(rows.end(), more.begin(), more.end());
  }
  // What import writes, fit must read: every row read back through the same checks
  // first (an importer's row that fit refused was written with exit 0).
  try {
    parse_measurements(measurements_csv(rows), "calibrate import: row");
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (made from " + join({inputs.begin() + 1, inputs.end()}) +
                     "); nothing written");
  }
  write_measurements(vm["output"].as<std::string>(), rows);
  std::printf("memwall: %zu measurements written to %s\n", rows.size(), vm["output"].as<std::string>().c_str());
  return 0;
}

std::vector<Measurement> read_all(const std::vector<std::string>& files)
{
  std::vector<Measurement> rows;
  for (const std::string& f : files) {
    std::vector<Measurement> more = read_measurements(f);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

// Whether a row matches an --exclude pattern: a benchmark (h2d_pageable), gemm:DTYPE, or
// layer:PREFIX (GEMM rows whose layer starts so: a model's layers held out of a fit).
bool excluded(const Measurement& m, const std::vector<std::string>& patterns)
{
  for (const std::string& x : patterns)
    if (x == m.benchmark || (m.benchmark == "gemm" && x == "gemm:" + m.dtype) ||
        (x.rfind("layer:", 0) == 0 && !m.layer.empty() && m.layer.rfind(x.substr(6), 0) == 0))
      return true;
  return false;
}

int fit(const std::vector<std::string>& args)
{
  po::options_description opts("memwall calibrate fit MEAS.csv... -o PROFILE.yaml [--gpu ID]");
  opts.add_options()("help,h", "this help")("inputs", po::value<std::vector<std::string>>()->required(),
                                            "measurement CSVs")(
      "gpu", po::value<std::string>(), "fit only the rows of this GPU (required when the files hold several)")(
      "exclude", po::value<std::vector<std::string>>()->composing(),
      "leave out rows of a benchmark (bidir_pinned), of gemm:DTYPE (gemm:fp16) or of layer:PREFIX "
      "(layer:llama2-7b.); repeatable")("output,o", po::value<std::string>()->required(), "profile YAML to write")(
      "event-overhead", po::value<double>()->default_value(0),
      "seconds each event-timed kernel measurement holds beyond the kernel's time on a busy stream (the events' "
      "and the launch's latency), taken off every kernel the profile times: an event-timed smallest kernel less "
      "the start-to-start time of back-to-back small kernels in a trace of the same GPU")(
      "launch-gap", po::value<double>()->default_value(0),
      "seconds a busy stream idles between two back-to-back kernels (a trace's gap from one kernel's end to the "
      "next one's start): not held by kernels the host launches slower than the GPU runs them")(
      "zero-filled", po::value<std::vector<std::string>>()->composing(),
      "DTYPE=SPEEDUP: that dtype's GEMM rows ran on zero-filled operands, SPEEDUP times faster where compute-bound "
      "than on random ones (zeros switch fewer transistors, so a power-limited GPU holds higher clocks): its fitted "
      "big-tile efficiency is divided by SPEEDUP, e.g. fp8=1.114 (a bf16 8192^3 GEMM on zeros against random data on "
      "the same GPU); repeatable");
  po::variables_map vm;
  if (!parse_options(args, opts, "inputs", vm, -1))
    return 0;
  auto files   = vm["inputs"].as<std::vector<std::string>>();
  auto seconds = [&](const std::string& option) {
    double v = vm[option].as<double>();
    if (!(v >= 0 && v < 1e-3))
      throw InputError("calibrate fit --" + option + ": expected seconds in [0, 1e-3), got " + std::to_string(v));
    return v;
  };
  double event_overhead = seconds("event-overhead"), launch_gap = seconds("launch-gap");
  std::string out = vm["output"].as<std::string>();
  check_output_path(out, files);
  std::vector<std::string> exclude =
      vm.count("exclude") ? vm["exclude"].as<std::vector<std::string>>() : std::vector<std::string>{};
  for (const std::string& x : exclude) {
    const auto& names = benchmark_names();
    bool gemm_dtype   = x.rfind("gemm:", 0) == 0 && dtype_from_name(x.substr(5));
    bool layer        = x.rfind("layer:", 0) == 0 && x.size() > 6;
    if (!gemm_dtype && !layer && std::find(names.begin(), names.end(), x) == names.end())
      throw InputError("calibrate fit --exclude: '" + x + "' is neither a benchmark (" + join(names) +
                       "), gemm:DTYPE nor layer:PREFIX");
  }
  std::vector<Measurement> rows = read_all(files);
  std::string gpu               = vm.count("gpu") ? vm["gpu"].as<std::string>() : rows.front().gpu;
  std::vector<Measurement> mine;
  for (const Measurement& m : rows)
    if (m.gpu == gpu) {
      if (!excluded(m, exclude))
        mine.push_back(m);
    } else if (!vm.count("gpu")) {
      throw InputError("calibrate fit: the measurements hold GPUs " + gpu + " and " + m.gpu +
                       "; choose one with --gpu");
    }
  if (mine.empty())
    throw InputError("calibrate fit: no measurements of GPU " + gpu);
  GpuSpec spec = gpu_preset(gpu, "calibrate fit: measurement gpu");
  std::string source;
  for (const std::string& f : files)
    source += (source.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
  for (const std::string& x : exclude)
    source += " (without " + x + ")";
  // --zero-filled: read before fitting, so that a typo is refused before the long fit.
  std::vector<std::pair<Dtype, double>> zero_filled;
  if (vm.count("zero-filled"))
    for (const std::string& z : vm["zero-filled"].as<std::vector<std::string>>()) {
      size_t eq              = z.find('=');
      std::optional<Dtype> d = eq == std::string::npos ? std::nullopt : dtype_from_name(z.substr(0, eq));
      double speedup         = 0;
      if (d) {
        char* end = nullptr;
        speedup   = std::strtod(z.c_str() + eq + 1, &end);
        if (end == z.c_str() + eq + 1 || *end != '\0')
          speedup = 0;
      }
      if (!d || !(speedup >= 1 && speedup <= 2))
        throw InputError("calibrate fit --zero-filled: expected DTYPE=SPEEDUP with a dtype and a speed-up in [1, "
                         "2] (e.g. fp8=1.114), got '" +
                         z + "'");
      for (const auto& [seen, _] : zero_filled)
        if (seen == *d)
          throw InputError("calibrate fit --zero-filled: " + z.substr(0, eq) + " given twice");
      zero_filled.emplace_back(*d, speedup);
      source += " (" + z.substr(0, eq) + " zero-filled: efficiency / " + z.substr(eq + 1) + ")";
    }
  GpuProfile p = fit_profile(mine, spec, "memwall calibrate fit over " + source);
  for (const auto& [d, speedup] : zero_filled) {
    auto it = p.gemm.find(d);
    if (it == p.gemm.end())
      throw InputError("calibrate fit --zero-filled: no " + std::string(dtype_name(d)) + " GEMM rows to correct");
    for (const auto& [key, table] : p.gemm_tables)
      if (key.first == d) // a table holds the measured times themselves, which no efficiency corrects
        throw InputError("calibrate fit --zero-filled: the " + std::string(dtype_name(d)) +
                         " rows name their pass and are kept as measured; correct the measurements instead");
    it->second.efficiency /= speedup;
    for (auto& [key, model] : p.gemm_passes)
      if (key.first == d)
        model.efficiency /= speedup;
  }
  p.event_overhead_s = event_overhead;
  p.launch_gap_s     = launch_gap;
  // What fit writes, run and check must read: the profile read back through the same
  // checks first (a fit of extreme rows wrote launch_s 4e-17 and blend 7.9e34, which
  // every later command refused).
  std::string yaml = profile_yaml(p);
  try {
    read_profile(yaml, out);
  } catch (const InputError& e) {
    throw InputError("calibrate fit: these measurements fit a profile memwall would refuse (" + std::string(e.what()) +
                     "); check their rows, or leave them out with --exclude; nothing written");
  }
  write_atomically(out, [&](const std::string& temp) {
    std::ofstream f(temp);
    f << yaml;
    f.close();
    if (!f)
      throw std::runtime_error(out + ": could not write the profile");
  });
  std::printf("memwall: profile of %s from %zu measurements written to %s\n", gpu.c_str(), mine.size(), out.c_str());
  return 0;
}

// One row per measurement with the profile's prediction: where a fit misses.
void write_residuals(const std::string& path, const std::vector<Measurement>& rows,
                     const std::vector<double>& predicted)
{
  write_atomically(path, [&](const std::string& temp) {
    std::ofstream f(temp);
    f << "gpu,benchmark,dtype,pass,layer,m,n,k,ranks,ranks_per_node,bytes,time_s,predicted_s,error\n";
    f.precision(10);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Measurement& m = rows[i];
      f << m.gpu << ',' << m.benchmark << ',' << m.dtype << ',' << m.pass << ',' << m.layer << ',' << m.m << ',' << m.n
        << ',' << m.k << ',' << m.ranks << ',' << m.ranks_per_node << ',' << m.bytes << ',' << m.time_s << ',';
      if (predicted[i] >= 0)
        f << predicted[i] << ',' << predicted[i] / m.time_s - 1;
      else
        f << ',';
      f << '\n';
    }
    f.close();
    if (!f)
      throw std::runtime_error(path + ": could not write the residuals");
  });
}

int check(const std::vector<std::string>& args)
{
  po::options_description opts("memwall calibrate check PROFILE.yaml MEAS.csv... [--residuals FILE.csv]");
  opts.add_options()("help,h", "this help")("inputs", po::value<std::vector<std::string>>()->required(),
                                            "the profile, then measurement CSVs (points held out of its fit)")(
      "residuals", po::value<std::string>(),
      "write every row's prediction and error (predicted / measured - 1) to this CSV");
  po::variables_map vm;
  if (!parse_options(args, opts, "inputs", vm, -1))
    return 0;
  auto inputs = vm["inputs"].as<std::vector<std::string>>();
  if (inputs.size() < 2)
    throw InputError("calibrate check: expected a profile YAML and at least one measurement CSV");
  std::string residuals = vm.count("residuals") ? vm["residuals"].as<std::string>() : "";
  if (!residuals.empty())
    check_output_path(residuals, inputs);
  GpuProfile p                  = load_profile(inputs[0]);
  std::vector<Measurement> rows = read_all({inputs.begin() + 1, inputs.end()});
  size_t skipped                = 0;
  std::optional<GpuSpec> gpu;
  if (is_gpu_preset(p.gpu))
    gpu = gpu_preset(p.gpu);
  std::vector<double> predicted;
  std::vector<CheckLine> lines = check_profile(p, rows, skipped, gpu ? &*gpu : nullptr, &predicted);
  if (!residuals.empty())
    write_residuals(residuals, rows, predicted);
  std::printf("profile %s (%s) against %zu measurements\n", inputs[0].c_str(), p.gpu.c_str(), rows.size());
  std::printf("%-24s %7s %10s %10s %10s %10s\n", "benchmark", "points", "median|e|", "p90|e|", "max|e|", "bias");
  for (const CheckLine& l : lines)
    std::printf("%-24s %7zu %9.1f%% %9.1f%% %9.1f%% %+9.1f%%\n", l.benchmark.c_str(), l.points, 100 * l.median_error,
                100 * l.p90_error, 100 * l.max_error, 100 * l.median_signed);
  if (skipped)
    std::printf("%zu measurements have no model in the profile\n", skipped);
  if (!residuals.empty())
    std::printf("memwall: residuals of %zu measurements written to %s\n", rows.size(), residuals.c_str());
  return 0;
}

} // namespace

int calibrate_command(const std::vector<std::string>& args)
{
  static const std::map<std::string, int (*)(const std::vector<std::string>&)> verbs{
      {"measure", measure}, {"import", import}, {"fit", fit}, {"check", check}};
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    std::cout
        << "memwall calibrate VERB [options]: from a real GPU to a hardware profile the replay uses\n"
           "  measure -o MEAS.csv [--gpu ID] [--quick]        run the CUDA microbenchmarks on this machine's GPU\n"
           "  import FORMAT FILE... --gpu ID -o MEAS.csv      other people's measurements (memwall list importers)\n"
           "  fit MEAS.csv... -o PROFILE.yaml [--gpu ID]      fit every model the measurements allow\n"
           "  check PROFILE.yaml MEAS.csv... [--residuals F]  error of the profile on (held-out) measurements\n"
           "Then `hardware: {profile: PROFILE.yaml}` in a spec uses it (over the GPU's shipped profile).\n"
           "memwall calibrate VERB --help for each verb's options.\n";
    return 0;
  }
  if (args.empty() || !verbs.count(args[0]))
    throw InputError("calibrate: expected one of measure, import, fit, check (memwall calibrate --help)");
  return verbs.at(args[0])({args.begin() + 1, args.end()});
}

} // namespace memwall

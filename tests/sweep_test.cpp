// Sweeps: every point lands in one HDF5 table (errors included), values equal single
// runs of the same settings, and a sweep killed with SIGKILL resumes to the same table.
#include "analysis/StepReport.hpp"
#include "app/sweep/SweepFile.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

using namespace memwall;
using namespace memwall::test;

namespace {

// The 12 points of twelve_point_sweep (4 invalid), with one more derived metric.
const std::string sweep_yaml = twelve_point_sweep + "  tokens_per_micro_batch: micro_batch * 512\n";

std::string write_sweep(const std::string& name, const std::string& text)
{
  std::string path = temp_path(name + ".yaml");
  write_file(path, text);
  return path;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void check_same_tables(const ResultsTable& a, const ResultsTable& b)
{
  REQUIRE(a.columns == b.columns);
  REQUIRE(a.rows() == b.rows());
  for (const auto& [name, col] : a.numbers)
    for (size_t r = 0; r < col.size(); ++r) {
      INFO(name << " row " << r);
      CHECK(same(col[r], b.numbers.at(name)[r]));
    }
  for (const auto& [name, col] : a.texts)
    CHECK(col == b.texts.at(name));
}

} // namespace

TEST_CASE("a_sweep_records_every_point_with_invalid_ones_as_errors_and_values_equal_single_runs", "[sweep]")
{
  std::string spec = write_sweep("sweep12", sweep_yaml), h5 = temp_path("sweep12.h5");
  CliResult r = run_cli("sweep " + spec + " -o " + h5 + " -j 2");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  ResultsTable t = read_sweep_file(h5);
  REQUIRE(t.rows() == 12);
  CHECK(t.axes == std::vector<std::string>{"training.micro_batch", "training.tp"});
  CHECK(t.points_total == 12);
  CHECK_FALSE(t.attributes.at("finished_at").empty());
  CHECK(t.attributes.at("sweep_text") == sweep_yaml);
  const auto& mb = t.numbers.at("training.micro_batch");
  const auto& tp = t.numbers.at("training.tp");
  for (size_t i = 0; i < 12; ++i) {
    INFO("point " << i);
    CHECK(t.numbers.at("index")[i] == i);
    // First axis slowest: micro batch 1, 2, 4, 8 each with tp 1, 2, 5.
    CHECK(mb[i] == std::vector<double>{1, 2, 4, 8}[i / 3]);
    CHECK(tp[i] == std::vector<double>{1, 2, 5}[i % 3]);
    if (tp[i] == 5) {
      CHECK(t.texts.at("status")[i] == "error");
      CHECK_THAT(t.texts.at("error")[i], Catch::Contains("does not divide"));
      CHECK(std::isnan(t.numbers.at("step_time_s")[i]));
      continue;
    }
    CHECK(t.texts.at("status")[i] == "ok");
    // The same settings as one run of their own give the same numbers.
    ExperimentSpec s = parse_spec("hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                                  "training: {seq_len: 512, global_batch: 64, micro_batch: " +
                                      std::to_string(int(mb[i])) + ", tp: " + std::to_string(int(tp[i])) + "}\n",
                                  "single.yaml", "");
    auto j           = report_json(simulate(s, true));
    CHECK(t.numbers.at("step_time_s")[i] == j["step_time_s"].get<double>());
    CHECK(t.numbers.at("mfu")[i] == j["mfu"].get<double>());
    CHECK(t.numbers.at("breakdown_s.compute")[i] == j["breakdown_s"]["compute"].get<double>());
    CHECK(t.numbers.at("breakdown_s.compute")[i] > 0);
    CHECK(t.numbers.at("breakdown_s.exposed_comm")[i] == j["breakdown_s"]["exposed_comm"].get<double>());
    CHECK(t.numbers.at("gpu.peak_bytes")[i] == j["devices"][0]["peak_bytes"].get<double>());
    CHECK(t.numbers.at("step_ms")[i] == Approx(1000 * j["step_time_s"].get<double>()).epsilon(1e-12));
    // A metric names an axis by the last part of its key, as the filter does.
    CHECK(t.numbers.at("tokens_per_micro_batch")[i] == 512 * mb[i]);
    // One DGX A100 node costs 200,000 USD in the catalog; two of its eight GPUs are used:
    // their share, 2/8 x 200,000 = 50,000 USD (a whole node when all eight are).
    CHECK(t.numbers.at("hardware_cost_usd")[i] == 50000);
  }
}

TEST_CASE("a_sweep_killed_with_sigkill_and_resumed_ends_identical_to_an_uninterrupted_run", "[sweep]")
{
  // 48 points (the twelve-point grid x 4 ZeRO stages), so that a loaded machine cannot
  // finish them all before the kill lands: with 12, a slow poller once saw a finished file.
  std::string yaml = twelve_point_sweep;
  yaml.replace(yaml.find("  training.tp: [1, 2, 5]\n"), std::string("  training.tp: [1, 2, 5]\n").size(),
               "  training.tp: [1, 2, 5]\n  training.zero: [0, 1, 2, 3]\n");
  std::string spec  = write_sweep("sweep_kill", yaml);
  std::string whole = temp_path("sweep_whole.h5"), killed = temp_path("sweep_killed.h5");
  std::filesystem::remove(killed);
  REQUIRE(run_cli("sweep " + spec + " -o " + whole + " -j 2").exit_code == 0);

  pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stderr);
    std::freopen("/dev/null", "w", stdout);
    execl(MEMWALL_BINARY, MEMWALL_BINARY, "sweep", spec.c_str(), "-o", killed.c_str(), "-j", "1", (char*)nullptr);
    _exit(127);
  }
  // Kill it once a few points are in the file (or at once if it is very fast).
  size_t done_before = 0;
  for (int i = 0; i < 2000; ++i) {
    if (std::filesystem::exists(killed)) {
      try {
        done_before = read_sweep_file(killed).rows();
      } catch (...) {
      }
      if (done_before >= 3)
        break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  INFO("points seen before the kill: " << done_before);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // Whatever moment it died, the file is a readable results file.
  ResultsTable partial = read_sweep_file(killed);
  INFO("points in the file when killed: " << partial.rows());
  CHECK(partial.rows() < 48);
  CHECK(partial.attributes.at("finished_at").empty());

  CliResult r = run_cli("sweep " + spec + " -o " + killed + " -j 2 --resume");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_same_tables(read_sweep_file(whole), read_sweep_file(killed));
}

TEST_CASE("a_sweep_records_memory_timelines_per_point_when_asked", "[sweep]")
{
  std::string spec = write_sweep("sweep_mem", std::string(sweep_yaml) + "record: {memory: true, links: true}\n");
  std::string h5   = temp_path("sweep_mem.h5");
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 2").exit_code == 0);
  SweepSpec sweep = load_sweep(spec);
  SweepFileInfo info;
  auto rows = read_sweep_rows(h5, sweep, info);
  REQUIRE(rows.size() == 12);
  const SweepRow& first = rows.at(0);
  REQUIRE_FALSE(first.pools.empty());
  // The timeline's highest total is the peak the table reports for that GPU.
  double highest = 0;
  for (const auto& p : first.pools)
    if (p.name == "node0.gpu0")
      for (const auto& e : p.timeline)
        highest = std::max(highest, e.total_bytes);
  double peak = 0;
  for (const auto& [k, v] : first.numbers)
    if (k == "gpu.peak_bytes")
      peak = v;
  CHECK(highest == peak);
  CHECK_FALSE(first.links.empty());
}

TEST_CASE("a_dry_run_lists_every_point_with_its_settings_and_runs_nothing", "[sweep]")
{
  std::string spec = write_sweep("sweep_dry", sweep_yaml);
  CliResult r      = run_cli("sweep " + spec + " --dry-run");
  REQUIRE(r.exit_code == 0);
  // 4 micro batches x 3 tp values, first axis slowest, in --set syntax.
  CHECK_THAT(r.out,
             Catch::StartsWith("0: training.micro_batch=1 training.tp=1\n1: training.micro_batch=1 training.tp=2\n"));
  CHECK_THAT(r.out, Catch::Contains("11: training.micro_batch=8 training.tp=5\n12 points\n"));
}

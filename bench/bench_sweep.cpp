// Sweep throughput: points per minute of `memwall sweep -j JOBS`, each point forked,
// replayed and written to the HDF5 file, median of RUNS sweeps into fresh files:
//  - 200 mid-size training points (GPT-2 XL, 1.5B parameters, data parallel on a DGX
//    A100: 5 micro-batches x 4 ZeRO stages x 5 global batches x 2 recompute settings,
//    8 to 256 micro-batches a step);
//  - the example sweeps examples/sweeps/gpt2-xl-layouts-dgx-a100.yaml (49 layouts of
//    one DGX A100) and llama2-7b-purchase-study.yaml (18 clusters of 1 to 32 nodes).
//   bench_sweep [JOBS] [RUNS]
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct SweepScenario {
  std::string name;
  std::string spec; // a sweep file
  int points;
};

// The median wall time of `runs` sweeps of `s` into fresh files, or < 0 when one failed.
double median_wall(const SweepScenario& s, const std::filesystem::path& out, int jobs, int runs,
                   std::vector<double>& walls)
{
  for (int i = 0; i < runs; ++i) {
    std::filesystem::remove(out);
    std::string cmd = std::string(MEMWALL_BINARY) + " sweep " + s.spec + " -o " + out.string() + " -j " +
                      std::to_string(jobs) + " >/dev/null 2>&1";
    auto t0    = std::chrono::steady_clock::now();
    int status = std::system(cmd.c_str());
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench_sweep: %s failed\n", cmd.c_str());
      return -1;
    }
  }
  std::vector<double> sorted = walls;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
  int jobs = argc > 1 ? std::atoi(argv[1]) : 2;
  int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  auto dir = std::filesystem::temp_directory_path() / "memwall-bench-sweep";
  std::filesystem::create_directories(dir);
  std::string grid = (dir / "sweep.yaml").string();
  std::ofstream(grid) << "spec:\n"
                         "  hardware: {node: dgx-a100}\n"
                         "  model: {preset: gpt2-xl}\n"
                         "  training: {seq_len: 1024, global_batch: 128, micro_batch: 1}\n"
                         "grid:\n"
                         "  training.micro_batch: [1, 2, 4, 8, 16]\n"
                         "  training.zero: [0, 1, 2, 3]\n"
                         "  training.global_batch: [128, 256, 512, 1024, 2048]\n"
                         "  training.recompute: [none, full]\n";
  const std::string examples                 = std::string(MEMWALL_SOURCE_DIR) + "/examples/sweeps/";
  const std::vector<SweepScenario> scenarios = {
      {"gpt2-xl dp8 dgx-a100, 200-point grid", grid, 200},
      {"examples/sweeps/gpt2-xl-layouts-dgx-a100", examples + "gpt2-xl-layouts-dgx-a100.yaml", 49},
      {"examples/sweeps/llama2-7b-purchase-study", examples + "llama2-7b-purchase-study.yaml", 18},
  };
  std::printf("sweeps with -j %d, median of %d runs\n", jobs, runs);
  std::printf("%-44s %8s %10s %12s  %s\n", "scenario", "points", "wall [s]", "points/min", "runs [s]");
  for (const SweepScenario& s : scenarios) {
    std::vector<double> walls;
    double median = median_wall(s, dir / "sweep.h5", jobs, runs, walls);
    if (median < 0)
      return 1;
    std::printf("%-44s %8d %10.2f %12.0f  ", s.name.c_str(), s.points, median, s.points * 60 / median);
    for (double w : walls)
      std::printf("%.2f ", w);
    std::printf("\n");
  }
  return 0;
}

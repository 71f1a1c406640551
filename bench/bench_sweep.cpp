// Sweep throughput: points per minute of `memwall sweep -j 2` over 200 mid-size training
// points (GPT-2 XL, 1.5B parameters, data parallel on a DGX A100: 5 micro-batches x 4
// ZeRO stages x 5 global batches x 2 recompute settings, 8 to 256 micro-batches a
// step), each point forked, replayed and written to the HDF5 file. Prints the median of
// 3 sweeps into fresh files.
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

int main(int argc, char** argv)
{
  int jobs = argc > 1 ? std::atoi(argv[1]) : 2;
  int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  auto dir = std::filesystem::temp_directory_path() / "memwall-bench-sweep";
  std::filesystem::create_directories(dir);
  std::string spec = (dir / "sweep.yaml").string(), out = (dir / "sweep.h5").string();
  std::ofstream(spec) << "spec:\n"
                         "  hardware: {node: dgx-a100}\n"
                         "  model: {preset: gpt2-xl}\n"
                         "  training: {seq_len: 1024, global_batch: 128, micro_batch: 1}\n"
                         "grid:\n"
                         "  training.micro_batch: [1, 2, 4, 8, 16]\n"
                         "  training.zero: [0, 1, 2, 3]\n"
                         "  training.global_batch: [128, 256, 512, 1024, 2048]\n"
                         "  training.recompute: [none, full]\n";
  std::vector<double> walls;
  for (int i = 0; i < runs; ++i) {
    std::filesystem::remove(out);
    std::string cmd = std::string(MEMWALL_BINARY) + " sweep " + spec + " -o " + out + " -j " + std::to_string(jobs) +
                      " >/dev/null 2>&1";
    auto t0    = std::chrono::steady_clock::now();
    int status = std::system(cmd.c_str());
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench_sweep: %s failed\n", cmd.c_str());
      return 1;
    }
  }
  std::sort(walls.begin(), walls.end());
  double median = walls[walls.size() / 2];
  std::printf("%-52s %10s %12s %14s\n", "scenario (median of runs)", "points", "wall [s]", "points/min");
  std::printf("%-52s %10d %12.2f %14.0f\n", ("sweep gpt2-xl dp8 dgx-a100, -j " + std::to_string(jobs)).c_str(), 200,
              median, 200 * 60 / median);
  std::printf("(runs: ");
  for (double w : walls)
    std::printf("%.2f s ", w);
  std::printf("; file %.1f MB)\n", static_cast<double>(std::filesystem::file_size(out)) / 1e6);
  return 0;
}

// Layout search throughput: `memwall optimize -j JOBS` over every layout of a job, each
// replayed in a forked worker into the results file; wall time, CPU time of the workers
// and layouts replayed per second, median of RUNS searches into fresh files:
//  - GPT-3 175B on 1,024 A100-80GB (128 DGX A100), 1,536 sequences of 2,048 tokens
//    (Narayanan et al. 2021, Table 1), every layout the axes propose;
//  - Megatron 1T on 3,072 A100-80GB (examples/megatron-1t-tp8-pp64-384xdgx-a100.yaml).
//   bench_optimize [JOBS] [RUNS] [NAME-SUBSTRING]
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

struct Search {
  std::string name, spec;
};

double children_cpu()
{
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
  int jobs           = argc > 1 ? std::atoi(argv[1]) : 2;
  int runs           = argc > 2 ? std::atoi(argv[2]) : 1;
  std::string filter = argc > 3 ? argv[3] : "";
  auto dir           = std::filesystem::temp_directory_path() / "memwall-bench-optimize";
  std::filesystem::create_directories(dir);
  std::string gpt3 = (dir / "gpt3-175b-1024xa100.yaml").string();
  std::ofstream(gpt3) << "hardware: {node: dgx-a100, nodes: 128}\nmodel: {preset: gpt3-175b}\n"
                         "training: {seq_len: 2048, global_batch: 1536, micro_batch: 1, tp: 8, sp: true, pp: 16, "
                         "recompute: selective, precision: bf16, zero: 1}\n";
  std::vector<Search> searches{
      {"GPT-3 175B on 1,024 A100-80GB, every layout", gpt3},
      {"Megatron 1T on 3,072 A100-80GB, every layout",
       std::string(MEMWALL_SOURCE_DIR) + "/examples/megatron-1t-tp8-pp64-384xdgx-a100.yaml"}};
  std::printf("%-48s %10s %10s %10s %12s %12s\n", "search", "layouts", "replayed", "wall", "CPU", "layouts/s");
  for (const Search& s : searches) {
    if (!filter.empty() && s.name.find(filter) == std::string::npos)
      continue;
    std::vector<double> walls, cpus;
    std::string log = (dir / "log.txt").string(), out = (dir / "search.h5").string();
    long enumerated = 0, replayed = 0;
    for (int i = 0; i < runs; ++i) {
      std::filesystem::remove(out);
      std::string cmd = std::string(MEMWALL_BINARY) + " optimize " + s.spec + " -o " + out + " -j " +
                        std::to_string(jobs) + " >/dev/null 2>" + log;
      double cpu0 = children_cpu();
      auto t0     = std::chrono::steady_clock::now();
      int status  = std::system(cmd.c_str());
      walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      cpus.push_back(children_cpu() - cpu0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "bench_optimize: %s failed\n", cmd.c_str());
        return 1;
      }
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::smatch m;
      if (std::regex_search(text, m, std::regex(R"((\d+) layouts planned, (\d+) replayed)"))) {
        enumerated = std::stol(m[1]);
        replayed   = std::stol(m[2]);
      }
    }
    double wall = median(walls);
    std::printf("%-48s %10ld %10ld %8.1f s %10.1f s %12.1f\n", s.name.c_str(), enumerated, replayed, wall, median(cpus),
                static_cast<double>(replayed) / wall);
    std::fflush(stdout);
  }
  std::printf("(median of %d search%s, -j %d)\n", runs, runs == 1 ? "" : "es", jobs);
  return 0;
}

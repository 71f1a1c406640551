// Benchmark (not a test): wall time, CPU time and peak memory of simulating one training
// step, and of serving runs of 10,000 and 100,000 requests.
//   1.5B model (gpt2-xl), dp = 8 on one DGX A100
//   7B model (llama-2-7b), dp = 64 on 8 DGX H100
//   GPT-2 with dp = 16,384 on 2,048 DGX A100 (mostly the platform build)
//   Llama-2-70B ZeRO-3 on 4 DGX H100 (examples/), and on 48 with the step-by-step ring
//   GPT-3 175B, tp 8 x pp 8 interleaved on 8 DGX A100 (examples/)
//   Megatron 1T, tp 8 x pp 64 x dp 6 on 384 DGX A100 = 3,072 GPUs (examples/)
//   Llama-2-7B serving 10,000 and 100,000 Poisson requests on one A100-80GB (examples/, requests raised)
//   the platform alone of 384, 1,536 (12,288 GPUs) and 3,072 DGX H100 nodes: how its build grows
// Each run is a fresh process (one SimGrid Engine per process) doing the whole
// pipeline: spec, DAG, platform, replay. Prints the median of 5 runs (3 for the
// examples). `bench_simulation NAME-SUBSTRING` runs the matching scenarios only.
#include "Platform.hpp"
#include "Simulation.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace memwall;

namespace {

// A spec whose platform is N DGX H100 (the workload is never generated).
#define PLATFORM_YAML(N)                                                                                          \
  "hardware: {node: dgx-h100, nodes: " #N "}\nmodel: {preset: gpt2}\n"                                              \
  "training: {seq_len: 256, global_batch: 24576, micro_batch: 1}\n"

struct Scenario {
  const char* name;
  const char* yaml; // inline spec, or
  const char* file; // an example under the source tree
  int runs;
  const char* set = nullptr; // a --set override
  bool platform_only = false; // time building the spec's platform, nothing else
};

const Scenario scenarios[] = {
    {"gpt2-xl (1.5B), dp 8, 1 x DGX A100",
     "hardware: {node: dgx-a100}\nmodel: {preset: gpt2-xl}\n"
     "training: {seq_len: 1024, global_batch: 64, micro_batch: 4, precision: bf16}\n", nullptr, 5},
    {"llama-2-7b, dp 64, 8 x DGX H100",
     "hardware: {node: dgx-h100, nodes: 8}\nmodel: {preset: llama-2-7b}\n"
     "training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}\n", nullptr, 5},
    // A tiny model on a large cluster: what building the platform costs (16,384 GPUs).
    {"gpt2, dp 16384, 2048 x DGX A100",
     "hardware: {node: dgx-a100, nodes: 2048}\nmodel: {preset: gpt2}\n"
     "training: {seq_len: 256, global_batch: 16384, micro_batch: 1}\n", nullptr, 3},
    {"llama-2-70b zero3, 4 x DGX H100", nullptr, "examples/llama2-70b-zero3-4xdgx-h100.yaml", 3},
    // ZeRO-3 at 384 GPUs with the step-by-step ring: every all-gather and
    // reduce-scatter as 2 (n - 1) dependent steps.
    {"llama-2-70b zero3 ring, 48 x DGX H100",
     "hardware: {node: dgx-h100, nodes: 48, network: {collective_algorithm: ring}}\nmodel: {preset: llama-2-70b}\n"
     "training: {seq_len: 4096, global_batch: 384, micro_batch: 1, zero: 3, recompute: full, precision: bf16}\n",
     nullptr, 3},
    {"gpt3-175b, tp8 pp8 interleaved, 64 GPUs", nullptr, "examples/gpt3-175b-tp8-pp8-interleaved-8xdgx-a100.yaml", 3},
    {"megatron-1t, tp8 pp64 dp6, 3072 GPUs", nullptr, "examples/megatron-1t-tp8-pp64-384xdgx-a100.yaml", 3},
    {"llama-2-7b serving 10k requests, 1 A100", nullptr, "examples/llama2-7b-serving-poisson-1xa100.yaml", 3,
     "inference.poisson.requests=10000"},
    // One run: it takes some 20 s (per request only its statistics are kept).
    {"llama-2-7b serving 100k requests, 1 A100", nullptr, "examples/llama2-7b-serving-poisson-1xa100.yaml", 1,
     "inference.poisson.requests=100000"},
    {"platform only, 384 x DGX H100", PLATFORM_YAML(384), nullptr, 3, nullptr, true},
    {"platform only, 1536 x DGX H100 (12,288 GPUs)", PLATFORM_YAML(1536), nullptr, 3, nullptr, true},
    {"platform only, 3072 x DGX H100", PLATFORM_YAML(3072), nullptr, 3, nullptr, true},
};

struct Sample {
  double wall_s;
  double cpu_s; // user + system, the whole process
  double ops;
  double activities;
  long max_rss_kb;
};

Sample run_once(const Scenario& s)
{
  int fds[2];
  if (pipe(fds) != 0)
    std::exit(3);
  std::fflush(stdout); // the child must not inherit and re-print buffered output
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto t0        = std::chrono::steady_clock::now();
    std::vector<std::string> set;
    if (s.set)
      set.push_back(s.set);
    ExperimentSpec spec = s.file ? load_spec(std::string(MEMWALL_SOURCE_DIR) + "/" + s.file, set)
                                 : parse_spec(s.yaml, "bench", "");
    RunResult r;
    if (s.platform_only) {
      start_engine();
      Platform platform(spec.cluster);
    } else // as `memwall run --json` does: no record per op, no memory timeline
      r = simulate(spec, /*in_child=*/false, {/*progress=*/false, /*coalesce=*/true, /*all_records=*/false, /*memory_timelines=*/false});
    double wall    = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double out[3]  = {wall, static_cast<double>(r.op_count), static_cast<double>(r.activities)};
    if (write(fds[1], out, sizeof out) != sizeof out)
      _exit(3);
    _exit(0);
  }
  close(fds[1]);
  double in[3] = {0, 0, 0};
  if (read(fds[0], in, sizeof in) != sizeof in)
    std::exit(3);
  close(fds[0]);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return {in[0], seconds(usage.ru_utime) + seconds(usage.ru_stime), in[1], in[2], usage.ru_maxrss};
}

} // namespace

int main(int argc, char** argv)
{
  std::printf("%-46s %10s %11s %9s %9s %12s\n", "scenario (median of runs)", "ops", "activities", "wall [s]", "CPU [s]",
              "peak RSS");
  for (const auto& s : scenarios) {
    if (argc > 1 && std::string(s.name).find(argv[1]) == std::string::npos)
      continue;
    std::vector<Sample> samples;
    for (int i = 0; i < s.runs; ++i)
      samples.push_back(run_once(s));
    auto median = [&](auto get) {
      std::vector<double> v;
      for (const auto& x : samples)
        v.push_back(get(x));
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    double wall = median([](const Sample& x) { return x.wall_s; });
    double cpu  = median([](const Sample& x) { return x.cpu_s; });
    double rss  = median([](const Sample& x) { return static_cast<double>(x.max_rss_kb); });
    std::printf("%-46s %10.0f %11.0f %9.3f %9.3f %8.1f MiB\n", s.name, samples[0].ops, samples[0].activities, wall, cpu,
                rss / 1024);
  }
  return 0;
}

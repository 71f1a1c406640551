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
//   a synthetic PyTorch profiler trace of 1,000,000 kernels (2.5 M events, gzip): read and
//   imported alone, and replayed (workload.trace)
// Each run is a fresh process (one SimGrid Engine per process) doing the whole
// pipeline: spec, DAG, platform, replay. Prints the median of 5 runs (3 for the
// examples). `bench_simulation NAME-SUBSTRING` runs the matching scenarios only.
#include "sim/platform/Platform.hpp"
#include "sim/Simulation.hpp"
#include "workloads/trace/TraceImporter.hpp"

#include <zlib.h>

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
#define PLATFORM_YAML(N)                                                                                               \
  "hardware: {node: dgx-h100, nodes: " #N "}\nmodel: {preset: gpt2}\n"                                                 \
  "training: {seq_len: 256, global_batch: 24576, micro_batch: 1}\n"

struct Scenario {
  const char* name;
  const char* yaml; // inline spec, or
  const char* file; // an example under the source tree
  int runs;
  const char* set    = nullptr; // a --set override
  bool platform_only = false;   // time building the spec's platform, nothing else
  bool import_only   = false;   // time reading and importing the spec's traces, nothing else
  bool on_trace      = false;   // the spec replays the synthetic trace (yaml unused)
};

// A Kineto trace of `kernels` kernels on one GPU, written once: each launched by a
// cudaLaunchKernel 8 us after the last (5-50 us kernels: partly host-bound), an NCCL
// all-reduce on a second stream after a cudaStreamWaitEvent every 50, an allocation and
// its free every 4, as torch.profiler writes them (2.5 events per kernel).
std::string synthetic_trace(int kernels)
{
  std::string path = "/tmp/memwall-bench-trace-" + std::to_string(kernels) + ".json.gz";
  if (access(path.c_str(), R_OK) == 0)
    return path;
  std::string tmp = path + ".part";
  gzFile f        = gzopen(tmp.c_str(), "wb1");
  std::string out = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],)"
                    R"( "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)";
  char line[512];
  double host = 1000, gpu = 1000;
  long long allocated = 8LL << 30;
  for (int k = 0; k < kernels; ++k) {
    bool nccl  = k % 50 == 49;
    double dur = 5 + static_cast<double>(static_cast<long long>(k) * 7919 % 46);
    int corr   = k + 1;
    if (nccl) {
      std::snprintf(
          line, sizeof line,
          R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": %.3f, "dur": 1.0, "args": {"correlation": %d}},)",
          host, 10000000 + k);
      out += line;
      host += 2;
    }
    std::snprintf(
        line, sizeof line,
        R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": %.3f, "dur": 4.0, "args": {"correlation": %d}},)",
        host, corr);
    out += line;
    gpu = std::max(gpu, host + 6);
    std::snprintf(
        line, sizeof line,
        R"({"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": %d, "ts": %.3f, "dur": %.3f, "args": {"device": 0, "stream": %d, "correlation": %d, "grid": [128, 1, 1], "block": [256, 1, 1]%s}},)",
        nccl ? "ncclKernel_AllReduce_RING_LL_Sum_float" : "void at::native::vectorized_elementwise_kernel<4>",
        nccl ? 20 : 7, gpu, dur, nccl ? 20 : 7, corr,
        nccl
            ? R"(, "Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 2, "dtype": "Float")"
            : "");
    out += line;
    gpu += dur;
    host += 8;
    if (k % 4 == 0) {
      long long bytes = 1 << 20;
      for (int sign : {1, -1}) {
        allocated += sign * bytes;
        std::snprintf(
            line, sizeof line,
            R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": %.3f, "args": {"Device Type": 1, "Device Id": 0, "Addr": %lld, "Bytes": %lld, "Total Allocated": %lld, "Total Reserved": 17179869184}},)",
            host + (sign > 0 ? 1 : 5), 4096LL * (k + 1), sign * bytes, allocated);
        out += line;
      }
    }
    if (out.size() > (1 << 22)) {
      gzwrite(f, out.data(), static_cast<unsigned>(out.size()));
      out.clear();
    }
  }
  out += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": )" +
         std::to_string(host) + R"(, "dur": 1.0, "args": {"correlation": 0}}]})";
  gzwrite(f, out.data(), static_cast<unsigned>(out.size()));
  gzclose(f);
  std::rename(tmp.c_str(), path.c_str());
  return path;
}

constexpr int trace_kernels = 1'000'000;
std::string trace_yaml()
{
  return "hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: " + synthetic_trace(trace_kernels) + "}\n";
}

const Scenario scenarios[] = {
    {"gpt2-xl (1.5B), dp 8, 1 x DGX A100",
     "hardware: {node: dgx-a100}\nmodel: {preset: gpt2-xl}\n"
     "training: {seq_len: 1024, global_batch: 64, micro_batch: 4, precision: bf16}\n",
     nullptr, 5},
    {"llama-2-7b, dp 64, 8 x DGX H100",
     "hardware: {node: dgx-h100, nodes: 8}\nmodel: {preset: llama-2-7b}\n"
     "training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}\n",
     nullptr, 5},
    // A tiny model on a large cluster: what building the platform costs (16,384 GPUs).
    {"gpt2, dp 16384, 2048 x DGX A100",
     "hardware: {node: dgx-a100, nodes: 2048}\nmodel: {preset: gpt2}\n"
     "training: {seq_len: 256, global_batch: 16384, micro_batch: 1}\n",
     nullptr, 3},
    {"llama-2-70b zero3, 4 x DGX H100", nullptr, "examples/llama2-70b-zero3-4xdgx-h100.yaml", 3},
    // ZeRO-3 at 384 GPUs with the step-by-step ring: every all-gather and
    // reduce-scatter as 2 (n - 1) dependent steps.
    {"llama-2-70b zero3 ring, 48 x DGX H100",
     "hardware: {node: dgx-h100, nodes: 48, network: {collective_algorithm: ring}}\nmodel: {preset: llama-2-70b}\n"
     "training: {seq_len: 4096, global_batch: 384, micro_batch: 1, zero: 3, recompute: full, precision: bf16}\n",
     nullptr, 3},
    // Eager PyTorch: ~150 kernels a layer, each tensor through the caching allocator.
    {"gpt2-xl pytorch stack, 1 x H100, 4 x 8 x 1024",
     "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: gpt2-xl}\n"
     "training: {stack: pytorch, seq_len: 1024, global_batch: 32, micro_batch: 8, optimizer: adamw}\n",
     nullptr, 5},
    {"llama-3-8b fsdp stack, 64 x A100, per-op AC", nullptr, "calibration/validation/torchtitan-llama3-8b-op.yaml", 3},
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
    {"trace import only, 1M kernels (2.5M events)", nullptr, nullptr, 3, nullptr, false, true, true},
    {"trace replay, 1M kernels (2.5M events)", nullptr, nullptr, 3, nullptr, false, false, true},
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
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> set;
    if (s.set)
      set.push_back(s.set);
    ExperimentSpec spec = s.file       ? load_spec(std::string(MEMWALL_SOURCE_DIR) + "/" + s.file, set)
                          : s.on_trace ? parse_spec(trace_yaml(), "bench", "")
                                       : parse_spec(s.yaml, "bench", "");
    RunResult r;
    if (s.import_only) {
      std::vector<KinetoTrace> traces;
      for (const std::string& f : spec.traces)
        traces.push_back(read_kineto_trace(f));
      r.op_count = static_cast<int64_t>(import_traces(traces, spec.cluster).op_count());
    } else if (s.platform_only) {
      start_engine();
      Platform platform(spec.cluster);
    } else // as `memwall run --json` does: no record per op, no memory timeline
      r = simulate(spec, /*in_child=*/false,
                   {/*progress=*/false, /*coalesce=*/true, /*all_records=*/false, /*memory_timelines=*/false});
    double wall   = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double out[3] = {wall, static_cast<double>(r.op_count), static_cast<double>(r.activities)};
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
    if (s.on_trace)
      synthetic_trace(trace_kernels); // written once, outside the timing
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

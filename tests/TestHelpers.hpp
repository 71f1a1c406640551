#pragma once
// Small builders shared by the tests: hand-made clusters whose every number is chosen
// so the expected times can be written out by hand, and a way to run the CLI.
#include "hwmodels/ClusterSpec.hpp"
#include "sim/result/RunResult.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/training/blocks/BlockKernels.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace memwall::test {

// The op DAG of a spec given as YAML text.
OpDag spec_workload(const std::string& yaml);
// The GPU index whose forward runs each layer ("L3" -> 1): where a pipeline split put it.
std::map<std::string, int> layer_gpus(const OpDag& dag);
// FLOPs (or bytes) of the ops of `kind` named `prefix` or `prefix.*` (`prefix.` and
// more: every op whose name starts with it).
double op_sum(const OpDag& dag, const std::string& prefix, OpKind kind, bool flops);

// A node of `gpus` identical GPUs with round numbers; see the definition for them.
ClusterSpec hand_cluster(int gpus, GpuFabric fabric, int gpus_per_switch);

Op kernel_op(const DeviceRef& gpu, double flops, double bytes, const std::string& name);

// GPUs 0..per_node-1 of nodes 0..nodes-1, node by node (a collective's group).
std::vector<DeviceRef> gpu_grid(int nodes, int per_node);

const OpRecord& record(const RunResult& r, const std::string& name);

// `nodes` DGX H100s (a GPT-2 spec around them, for tests of their network); `network`:
// keys of hardware.network ("nvls: false").
ExperimentSpec dgx_h100_spec(int nodes, const std::string& network = "");
// When one collective of `bytes` over every GPU of `nodes` DGX H100s ends, replayed alone
// with `algorithm`.
double dgx_h100_collective_end_s(CollectiveKind kind, int nodes, double bytes, const std::string& network = "",
                                 const std::string& algorithm = "nccl");

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the memwall binary with `args` (shell-quoted by the caller), after `launcher`
// when given (environment settings, mpirun and its options).
CliResult run_cli(const std::string& args, const std::string& launcher = "");
// Runs `memwall run NAME.yaml --json EXTRA` on `yaml` and returns the summary; the run
// must succeed (exit 0), a run that does not fit included.
nlohmann::json run_json(const std::string& name, const std::string& yaml, const std::string& extra = "");
// Runs `memwall run` on `yaml` (written to NAME.yaml) with -o and --trace and `extra`;
// checks the bad-input contract (exit 2, one line on stderr, nothing on stdout, no
// output file) and returns the error line.
std::string refused(const std::string& name, const std::string& yaml, const std::string& extra = "");
// GPT-2 small on a desktop RTX 4070, 2 sequences of 256 tokens: a spec that runs in
// well under a second, for tests that change one key of it.
inline const std::string small_training_spec = "hardware:\n  node: desktop-4070\nmodel:\n  preset: gpt2\ntraining:\n"
                                               "  seq_len: 256\n  global_batch: 2\n  micro_batch: 1\n";
// GPT-2 serving 10 requests of 64 + 8 tokens on one A100: a serving run in a moment.
inline const std::string small_serving_spec =
    "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
    "inference: {poisson: {rate: 50, requests: 10, seed: 5, prompt_len: 64, output_len: 8}}\n";
// GPT-2 on one A100 serving one sequence at a time (max_num_seqs 1) of 64 + 8 tokens,
// `requests` arriving as a Poisson process at `rate`: an M/D/1 queue, every request the
// same service time.
std::string md1_serving_spec(double rate, int requests);
// The spec of small_training_spec as a sweep's inline base: a sweep spec starts with it
// and adds its grid, zip, metrics or record.
inline const std::string sweep_base = "spec:\n  hardware: {node: desktop-4070}\n  model: {preset: gpt2}\n"
                                      "  training: {seq_len: 256, global_batch: 2, micro_batch: 1}\n";
// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);
std::string source_path(const std::string& relative);
// calibration/validation/NAME.yaml replayed (fits or not, a run that did not fit timed as if it fit).
RunResult simulate_validation(const std::string& name);
// A run's tokens per second, all GPUs together.
inline double tokens_per_s(const RunResult& r) { return r.tokens_per_step / r.makespan_s; }
// How much faster calibration/validation/FASTER.yaml runs than SLOWER.yaml, in tokens per second.
double validation_speedup(const std::string& faster, const std::string& slower);
std::string temp_path(const std::string& name);
void write_file(const std::string& path, const std::string& text);
// A `workload: {trace: ...}` spec of tests/data/traces/TRACE on `hardware` (a YAML value),
// with `more` lines appended; written to a temporary file whose path is returned.
std::string trace_spec(const std::string& hardware, const std::string& trace, const std::string& more = "");

// Sweep specs shared by the sweep tests, each a start that a test may extend with more
// keys (metrics lines, filter, record).
// GPT-2 small on two GPUs of a DGX A100: micro batch x tp, 4 x 3 = 12 points; tp = 5
// does not divide GPT-2's 12 heads, so those 4 points are invalid. Ends inside metrics.
inline const std::string twelve_point_sweep = "spec:\n"
                                              "  hardware: {node: dgx-a100, gpus_per_node: 2}\n"
                                              "  model: {preset: gpt2}\n"
                                              "  training: {seq_len: 512, global_batch: 64, micro_batch: 1}\n"
                                              "grid:\n"
                                              "  training.micro_batch: [1, 2, 4, 8]\n"
                                              "  training.tp: [1, 2, 5]\n"
                                              "metrics:\n"
                                              "  step_ms: step_time_s * 1000\n";
// GPT-2 small on one A100-40GB without flash attention, micro batch 2, 8, 32 x recompute
// none, full: micro batch 32 without recompute keeps 32 x 12 layers of s x s attention
// scores, far beyond 40 GB (the Korthikanti et al. estimate alone is
// 12 x sbh(34 + 5as/h) = 34.4 GB of activations). Ends inside grid.
inline const std::string gpt2_oom_sweep =
    "spec:\n"
    "  hardware: {node: dgx-a100, gpus_per_node: 1, gpu: a100-sxm4-40gb}\n"
    "  model: {preset: gpt2}\n"
    "  training: {seq_len: 1024, global_batch: 64, micro_batch: 1, flash_attention: false}\n"
    "grid:\n"
    "  training.micro_batch: [2, 8, 32]\n"
    "  training.recompute: [none, full]\n";

// One training step of a model family measured on an H200 (calibration/data/measured/h200/
// hf-families.csv: micro-batch 4 x 1,024, fp32 parameters under bf16 autocast, sdpa, fused
// AdamW): torch's max_memory_allocated and the median step time, by the CSV's family name.
struct MeasuredStep {
  double peak_allocated_bytes = 0, step_s = 0;
};
std::map<std::string, MeasuredStep> measured_family_steps();
// The spec of that step for memwall: the family's config (tests/data/hf_families/FAMILY),
// one H200, the pytorch stack (`more`: further keys of the training section, "k: v, ...").
std::string measured_family_spec(const std::string& family, const std::string& more = "");
// memwall's peak without the CUDA context (what max_memory_allocated counts) of a run's JSON.
double peak_without_context(const nlohmann::json& run);

// A DynamicCache's kernels in a training step: its cats of k and v onto the empty cache
// and the copies of their gradients back.
struct CacheKernels {
  int cats = 0, clones = 0;
};
// In one family's step measured on an H200 (calibration/data/measured/h200/
// hf-family-kernels.csv): CatArrayBatchedCopy<OpaqueType<2>, unsigned, 4, 64, 64> and the
// bf16 direct copies.
CacheKernels measured_cache_kernels(const std::string& family);
// In a block memwall plans (hf::dynamic_cache_update's cache_cat_* and bwd.clone_d*).
CacheKernels planned_cache_kernels(const BlockPlan& b);

} // namespace memwall::test

// vLLM: the fused kernels InferenceKernels plans, and its KV budget as the release of
// `inference.engine_release` measured it at start-up (VllmRelease.hpp).
#include "base/NumberFormat.hpp"
#include "base/Quantity.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/engine/VllmRelease.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace memwall {
namespace {

constexpr double MiB = 1024.0 * 1024.0;

// torch's cuBLAS workspace, allocated through the caching allocator at the profile's
// first GEMM: ":4096:8" (32 MiB) on Hopper, ":4096:2:16:8" elsewhere (CublasHandlePool.cpp).
double cublas_workspace(int compute_capability)
{
  return compute_capability >= 90 ? 32 * MiB : 4096.0 * 1024 * 2 + 16.0 * 1024 * 8;
}

std::string gib(double bytes) { return format_gib(bytes); }

class VllmEngine : public InferenceEngine {
public:
  explicit VllmEngine(VllmAccounting a) : a_(a) {}

  std::string default_scheduler(const std::string& source) const override
  {
    return source == "batch" ? "static" : "continuous";
  }
  int64_t default_block_size() const override { return 16; }

  BatchDefaults batch_defaults(const GpuSpec& gpu, const std::string& source, int64_t max_model_len) const override
  {
    BatchDefaults d;
    const std::string v = "vLLM " + a_.release.str();
    if (a_.batch != VllmBatchRule::v1) {
      // SchedulerConfig: whole prompts, max(max_model_len, 2048) tokens a step, 256
      // sequences; from 0.6 chunked prefill above 32K tokens (EngineArgs.create_engine_config).
      bool chunked             = a_.batch != VllmBatchRule::v0_whole_prompts && max_model_len > 32768;
      d.chunked_prefill        = chunked;
      d.max_num_batched_tokens = chunked ? (a_.batch == VllmBatchRule::v0_long_context_512 ? 512 : 2048)
                                         : std::max<int64_t>(max_model_len, 2048);
      d.max_num_seqs           = 256;
      d.whose                  = v + "'s defaults" + std::string(chunked ? " (chunked prefill above 32K tokens)" : "");
      return d;
    }
    // EngineArgs' V1 defaults: chunked prefill always; on a GPU of 70 GiB or more (not an
    // A100 from 0.9, pull request 17885) 16,384 tokens per iteration for the offline LLM
    // class and 8,192 for the API server, 1,024 sequences; else 8,192 and 2,048, 256.
    std::string name = gpu.name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    bool large = gpu.memory_bytes >= 70.0 * (1ull << 30) && !(a_.a100_small && name.find("a100") != std::string::npos);
    bool offline             = source == "batch";
    d.chunked_prefill        = true;
    d.max_num_batched_tokens = large ? (offline ? 16384 : 8192) : (offline ? 8192 : 2048);
    d.max_num_seqs           = large ? 1024 : 256;
    d.whose                  = v + "'s defaults for " + (offline ? "offline LLM.generate" : "an API server") + " on " +
              (large           ? "a GPU of 70 GiB or more"
               : a_.a100_small ? "a GPU under 70 GiB or an A100"
                               : "a GPU under 70 GiB");
    return d;
  }
  std::string summary_prefix() const override { return "vLLM " + a_.release.str() + ", "; }
  void check(ParamReader&, const InferenceConfig&, const ModelSpec&) const override {}
  void plan(const ModelSpec&, const InferenceConfig&, const std::vector<SeqWork>&, IterationKernels&) const override {}

  StartupBudget kv_budget(const StartupInputs& in) const override
  {
    StartupBudget b;
    if (in.offloaded) { // FlexGen's placement: its own sizes, not a vLLM profile run
      b.weights     = in.weights;
      b.activations = in.iteration_peak;
      b.kv_bytes    = in.total * in.utilization - b.weights - b.activations;
      return b;
    }
    // The profile run: the dummy batch's prompts (padded to the longest until 0.3.3).
    const double N = static_cast<double>(in.max_num_batched_tokens);
    const double S = std::max(1.0, std::min(static_cast<double>(in.max_num_seqs), N));
    const double T = a_.pads_prompts ? S * std::ceil(N / S) : N;
    const double e = in.act_bytes, h = in.hidden, I = in.inner;
    // The decoder layer's widest point: the caller's input, the residual, the attention's
    // output and the MLP's intermediates (and down_proj's output where gate_up lives on),
    // with the int64 token ids, positions and slot mapping.
    double layer = T * (e * ((a_.keeps_gate_up ? 4 : 3) * h + in.mlp_intermediates * I) + 24);
    // The sampler: the final hidden states, one row per sequence, and the logits over the
    // whole vocabulary through the full sort the profile forces (top_k = V - 1).
    double sampler       = T * (e * h + 24) + S * h * e + S * in.vocab * (a_.sampler_fixed + a_.sampler_per_b * e);
    const double profile = cublas_workspace(in.compute_capability) + std::max(layer, sampler);
    // vLLM's scheduler never exceeds the profiled batch; memwall's static batching
    // prefills a batch's prompts together, so room is left for its largest iteration too.
    b.activations = std::max(profile, in.iteration_peak);
    b.weights     = in.weights + in.rope_cache;
    // Outside torch, as the release's measurement saw it.
    if (a_.counts_context)
      b.outside_torch += in.context;
    if (in.tp > 1) {
      double comm = nccl_communicator_bytes(in.nccl_channels);
      if (a_.counts_comms)
        b.outside_torch += (a_.v1 ? 1 : 2) * comm; // V0: torch's world and tp groups; V1: pynccl
      if (a_.counts_lazy_comm)
        b.outside_torch += comm;     // torch's, made by the logits all-gather
      if (a_.pins_all_reduce_inputs) // two all-reduces a layer and the embedding's, T x h each
        b.outside_torch += (2.0 * static_cast<double>(in.layers) + 1) * T * h * e;
    }
    b.kv_bytes = in.total * in.utilization - b.weights - b.activations - b.outside_torch;
    std::string peak =
        "profile peak " + gib(profile) + " (" + format_count(T) + " tokens, " + format_count(S) + " sequences)";
    if (in.iteration_peak > profile)
      peak = "activations " + gib(b.activations) + " (static batching's largest iteration; the " + peak + ")";
    char line[400];
    std::snprintf(line, sizeof line, "vLLM %s (%s, the %s rules): %.2f x %s - weights %s - %s - outside torch %s = %s",
                  a_.release.str().c_str(), a_.v1 ? "V1" : "V0", a_.covers, in.utilization, gib(in.total).c_str(),
                  gib(b.weights).c_str(), peak.c_str(), gib(b.outside_torch).c_str(), gib(b.kv_bytes).c_str());
    b.how = line;
    return b;
  }

  std::string refuses_start(const StartupBudget& b, int64_t kv_tokens, int64_t block_tokens, int64_t max_model_len,
                            double bytes_per_token) const override
  {
    // V0 counted whole blocks (num_gpu_blocks <= 0); V1's check_enough_kv_cache_memory
    // the available bytes (<= 0), a positive budget under a block being a request that
    // does not fit, below.
    if (b.kv_bytes <= 0 || (!a_.v1 && kv_tokens < block_tokens))
      return "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
             "the engine.";
    if (!a_.refuses_short_kv)
      return "";
    const int64_t len = max_model_len;
    if (!a_.v1) { // raise_if_cache_size_invalid: max_model_len against the tokens the blocks hold
      if (len <= kv_tokens)
        return "";
      return "The model's max seq len (" + std::to_string(len) +
             ") is larger than the maximum number of tokens that can be stored in KV cache (" +
             std::to_string(kv_tokens) +
             "). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.";
    }
    // check_enough_kv_cache_memory: one request's blocks against the available memory.
    const double block_bytes = bytes_per_token * static_cast<double>(block_tokens);
    const double needed      = std::ceil(static_cast<double>(len) / static_cast<double>(block_tokens)) * block_bytes;
    if (needed <= b.kv_bytes)
      return "";
    char line[512];
    std::string estimate;
    if (a_.release.from({0, 9, 1})) // 0.8.x printed no estimate (its f-string was a dead statement)
      estimate = " the estimated maximum model length is " + std::to_string(kv_tokens) + ".";
    std::snprintf(line, sizeof line,
                  "To serve at least one request with the models's max seq len (%lld), (%.2f GiB KV cache is needed, "
                  "which is larger than the available KV cache memory (%.2f GiB). Based on the available memory,%s "
                  "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
                  static_cast<long long>(len), needed / (1024.0 * MiB), b.kv_bytes / (1024.0 * MiB), estimate.c_str());
    return line;
  }

private:
  VllmAccounting a_;
};

const bool registered = inference_engine_registry().add(
    "vllm",
    "vLLM: fused kernels (norms and adds inside the GEMMs, attention over paged KV), continuous batching, and the KV "
    "budget its start-up measures: gpu_memory_utilization of the GPU less the weights, the peak of a profile run of "
    "max_num_batched_tokens dummy tokens over max_num_seqs sequences (the sampler forced through its full sort) and "
    "what its release counted outside torch, each rule as vLLM " +
        VllmAccounting::releases() +
        " computed it (inference.engine_release). Where a spec does not say: KV blocks of 16 tokens, scheduler static "
        "for a fixed batch else continuous, and the release's batch defaults (0.2-0.5: whole prompts, "
        "max(max_model_len, 2048) tokens, 256 sequences; 0.6-0.7: chunked prefill above 32K tokens; V1 from 0.8: "
        "chunked prefill always, 8,192 tokens and 1,024 sequences a step for a server on a GPU of 70 GiB or more, else "
        "2,048 and 256)",
    [](ParamReader& r) {
      std::string text = r.text("engine_release", VllmAccounting::newest(),
                                "engine vllm: the vLLM release whose start-up accounting and defaults apply (" +
                                    VllmAccounting::releases() +
                                    "; 0.2.4 counted torch's allocations alone, 0.2.5 the whole GPU after the profile, "
                                    "0.6.4 torch's peak and what is outside torch, V1 from 0.8)");
      std::string why;
      std::optional<VllmAccounting> a = VllmAccounting::of(text, why);
      if (!a)
        r.fail("engine_release", why);
      return std::make_unique<VllmEngine>(*a);
    });

} // namespace
} // namespace memwall

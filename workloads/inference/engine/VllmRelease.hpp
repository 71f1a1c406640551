#pragma once
// vLLM's start-up memory accounting as each release computed it (`inference.engine_release`).
//
// Every release sizes the KV cache the same way: a profile run of a dummy batch
// (max_num_batched_tokens tokens over max_num_seqs sequences, KV caches empty, the sampler
// forced through its full-vocabulary sort), then
//   KV bytes = total x gpu_memory_utilization - (what the profile found taken),
//   blocks   = floor(KV bytes / block bytes).
// What "taken" counts, which dummy batch the defaults give, and which tensors are alive at
// the profile's peak moved from release to release; each rule below is read from vLLM's
// source at the releases named (calibration/research/vllm-kv-accounting.md).
#include "base/ReleaseNumber.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

// How the chunked-prefill default and the tokens per iteration follow max_model_len.
enum class VllmBatchRule {
  v0_whole_prompts,     // 0.2-0.5: chunked prefill off, max(max_model_len, 2048) tokens
  v0_long_context_512,  // 0.6.0-0.6.4: on above 32K tokens with 512 tokens, else as above
  v0_long_context_2048, // 0.6.5-0.7: the same with 2048 tokens
  v1                    // 0.8+: always on; tokens and sequences by GPU and usage context
};

struct VllmAccounting {
  // As the spec gave it (the rules are those of the row it falls in); in the table, the
  // first release the row covers.
  ReleaseNumber release;
  const char* covers = "";    // the releases it covers, as the summary says them
  bool v1            = false; // the V1 engine
  // Outside torch: what the profile's measurement subtracts besides torch's allocations.
  bool counts_context         = false; // the CUDA context (absent where the baseline was read after it)
  bool counts_comms           = false; // NCCL communicators made before the profile (tp > 1)
  bool counts_lazy_comm       = false; // torch's communicator made by the profile's logits gather (tp > 1)
  bool pins_all_reduce_inputs = false; // 0.2.5: recordStream keeps every all-reduced activation reserved
  // The profile's dummy batch and what is alive at its peak.
  bool pads_prompts  = false; // until 0.3.3 every dummy prompt padded to the longest
  bool keeps_gate_up = false; // Llama's MLP keeps gate_up alive through down_proj (0.2-0.5)
  // Bytes per sampled row and vocabulary entry at the sampler's peak: fixed + per_b x b
  // (b: the logits' element bytes).
  double sampler_fixed = 0, sampler_per_b = 0;
  VllmBatchRule batch   = VllmBatchRule::v1;
  bool refuses_short_kv = false; // refuses to start when max_model_len exceeds the KV (0.2.7+)
  bool a100_small       = false; // V1's defaults treat an A100 as a small GPU (0.9+)

  // The rule for `text`; nullopt with `why` set when it is malformed or not modelled.
  static std::optional<VllmAccounting> of(const std::string& text, std::string& why);
  static const char* newest();   // the default: the newest release modelled
  static std::string releases(); // "0.2.4 ... 0.11.x", for documentation
};

} // namespace memwall

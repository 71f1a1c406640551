#pragma once
// What a serving engine sees of one GPU when it starts, and what it leaves the KV cache
// (InferenceEngine::kv_budget). Plain data.
#include <cstdint>
#include <string>

namespace memwall {

struct StartupInputs {
  double total       = 0;   // the GPU's memory as cudaMemGetInfo reports it
  double utilization = 0.9; // gpu_memory_utilization
  double weights     = 0;   // one rank's weights on the GPU, with offloaded layers' staging buffers
  double context     = 0;   // the CUDA context and libraries
  // The activations of the largest iteration the requests make (for an engine without a
  // profile run of its own, and for FlexGen's placement, which vLLM does not run).
  double iteration_peak = 0;
  bool offloaded        = false; // weights or KV placed off the GPU (FlexGen's policy)
  // The scheduler's limits: the profile run's dummy batch.
  int64_t max_num_batched_tokens = 0, max_num_seqs = 0;
  // One rank's view of the model.
  int64_t tp = 1, layers = 0;
  double hidden = 0, inner = 0, vocab = 0; // vocab: the whole vocabulary (the sampler's)
  int mlp_intermediates  = 3;              // [T, inner] tensors the MLP makes: gated 3, else 2
  double act_bytes       = 2;
  double rope_cache      = 0; // a rotary model's cos/sin table, allocated with the weights
  int compute_capability = 0;
  int nccl_channels      = 16; // NCCL's channels per communicator (its buffers scale with them)
};

// NCCL's buffers for one communicator on one rank: each channel receives on a ring and a
// tree connection, each holding the three protocols' buffers (src/include/device.h and
// comm.h of NCCL 2.18-2.21: Simple 1 << 22 bytes, LL128 120 x 640 x 8 x 8, LL
// 8 x 512 x 8 x 16).
inline double nccl_communicator_bytes(int channels) { return channels * 2 * (4194304.0 + 4915200.0 + 524288.0); }

struct StartupBudget {
  double kv_bytes      = 0; // what the KV cache may take (negative: that much short)
  double weights       = 0; // as the engine counts them
  double activations   = 0; // the profile run's peak above the weights
  double outside_torch = 0; // what it counts beside torch's allocations
  double fraction      = 0; // the share of memory the engine took (SGLang's mem_fraction_static)
  std::string how;          // one line for the summary: the release and the sum ("" if none)
};

} // namespace memwall

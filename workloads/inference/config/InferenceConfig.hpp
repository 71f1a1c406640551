#pragma once
// The `inference` section: which requests (a fixed batch, a trace file or a Poisson
// generator), the model's precision, tensor parallelism, the batch scheduler, the KV
// memory manager and offloading. Read and checked in read_inference_section() (InferenceSection.hpp); the
// requests are resolved there, so a broken trace fails before anything runs.
#include "hwmodels/kernel/Dtype.hpp"
#include "workloads/inference/requests/PoissonRequests.hpp"
#include "workloads/inference/requests/Request.hpp"
#include "workloads/model/ModelSpec.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

enum class OffloadPlace { none, cpu, nvme };

// The implementations a spec picks, configured (InferenceSection makes them; their
// interfaces live in the concern folders above this one).
class InferenceEngine;
class BatchScheduler;
class KvManager;

// The scheduler's limits a spec gets where it gives none, as the engine's current
// release sets them, and the words that say whose they are.
struct BatchDefaults {
  bool chunked_prefill           = false;
  int64_t max_num_batched_tokens = 0;
  int64_t max_num_seqs           = 256;
  std::string whose; // "vLLM's defaults for an API server on a GPU of 70 GiB or more"
};

// What the scheduler's and KV manager's keys default to under the spec's engine.
struct EngineDefaults {
  BatchDefaults batch;
  int64_t max_model_len = 0;
  int64_t block_size    = 16; // tokens per KV block
};

// The parts of a category kept off the GPU, in host memory and on NVMe (FlexGen's percent
// policy); the GPU keeps the rest.
struct OffShares {
  double cpu  = 0;
  double nvme = 0;
  double total() const { return cpu + nvme; }
  bool any() const { return total() > 0; }
  double of(OffloadPlace p) const { return p == OffloadPlace::cpu ? cpu : p == OffloadPlace::nvme ? nvme : 0.0; }
};

struct InferenceConfig {
  std::string source = "batch"; // batch | trace | poisson
  std::string trace_path;       // as opened (relative paths resolved against the spec)
  double trace_speedup = 1;     // the trace's arrival times were divided by it
  std::vector<Request> requests;
  // Poisson lengths as asked (the requests hold what they came out as, after clipping).
  LengthDistribution prompt_dist, output_dist;
  double poisson_rate = 0;                       // arrivals per second (source poisson)
  std::shared_ptr<const InferenceEngine> engine; // how the model is served (its kernels, the KV budget)
  int64_t tp = 1;
  // MoE: the GPUs the experts are spread over, whole (1: each expert split by tp). ep = tp
  // spreads them over the replica's tp GPUs; ep = tp x d makes the replica d attention
  // data-parallel groups of tp GPUs whose MoE layers dispatch tokens by all-to-all.
  int64_t ep                    = 1;
  Dtype weight_dtype            = Dtype::fp16; // int8 / int4: weight-only, dequantized in the GEMM
  Dtype kv_dtype                = Dtype::fp16;
  Dtype act_dtype               = Dtype::fp16; // activations and the GEMMs' compute dtype (fp8: fp8 GEMMs)
  bool flash_attention          = true;
  double gpu_memory_utilization = 0.9;
  int64_t max_model_len         = 0;
  std::shared_ptr<const BatchScheduler> scheduler; // which sequences run each iteration, and its limits
  std::shared_ptr<const KvManager> kv_manager;     // how KV slots are held (a prototype each run starts)
  OffShares weights_off;                           // parts of every layer's weights kept off the GPU
  OffShares kv_off;                                // parts of every sequence's KV kept off the GPU
  OffShares act_off;                               // parts of the hidden states between layers kept off the GPU
  // Attention over KV held in host memory runs on the CPU (FlexGen's cpu_cache_compute,
  // ZeRO-Inference): queries go down, outputs come up, the KV never crosses PCIe.
  bool cpu_attention = false;
  // Each iteration's sequences run through a layer as this many GPU batches, one after
  // another, sharing the layer's weights (FlexGen's num_gpu_batches, zig-zag block).
  int64_t gpu_batches = 1;
  // Offloaded weights and KV in page-locked host memory (FlexGen's pin_weight, on by default).
  bool offload_pinned       = true;
  bool offload_pinned_given = false; // the spec said offload.pinned
  // Unified memory is on (spec `memory`): kernels record the tensors they touch.
  bool record_tensor_accesses = false;
  // Managed weights and activations hold no fixed room: the KV budget leaves them out
  // (the driver evicts them when KV needs the memory).
  bool managed_weights = false, managed_activations = false;
  // The KV cache in managed memory: held in slabs the attention kernels touch.
  bool managed_kv = false;

  double weight_bytes() const { return dtype_bytes(weight_dtype); }
  double kv_bytes() const { return dtype_bytes(kv_dtype); }
  double act_bytes() const { return act_dtype == Dtype::fp8 ? 2.0 : dtype_bytes(act_dtype); }
  // The dtype the GEMMs run at: fp8 weights run fp8 GEMMs, weight-only int8/int4 run at
  // the activation precision after dequantization.
  Dtype gemm_dtype() const
  {
    if (weight_dtype == Dtype::fp4 && fp4_compute)
      return Dtype::fp4;
    return weight_dtype == Dtype::fp8 ? Dtype::fp8 : act_dtype;
  }
  // The GPU has fp4 tensor cores (Blackwell, CDNA 4): fp4 weights run fp4 GEMMs (W4A4, as
  // TensorRT-LLM's NVFP4); elsewhere they are dequantized like int4 (gpt-oss's MXFP4 on Hopper).
  bool fp4_compute = false;
  // Attention data-parallel groups in the replica (vLLM's data_parallel_size with expert
  // parallelism, SGLang's DP attention): each runs its own batch of sequences with its
  // own KV cache, and all meet in every MoE layer's all-to-alls.
  int64_t attention_dp() const { return ep > tp ? ep / tp : 1; }
  int64_t replica_gpus() const { return tp * attention_dp(); }
  // KV heads are split over tp ranks, or replicated when there are fewer than tp.
  bool kv_heads_ok(const ModelSpec& m) const { return m.kv_heads % tp == 0 || tp % m.kv_heads == 0; }
  int64_t kv_heads_per_rank(const ModelSpec& m) const { return m.kv_heads >= tp ? m.kv_heads / tp : 1; }
};

} // namespace memwall

#pragma once
// What one serving iteration runs, as InferenceKernels plans it and an engine adjusts it
// (InferenceEngine::plan): the sequences' new tokens, each kernel's cost, one layer's
// kernels and collectives, and the iteration's embedding and head. Plain data, so that
// the engines below InferenceKernels can fill it.
#include "hwmodels/kernel/Dtype.hpp"
#include "hwmodels/kernel/KernelFamily.hpp"
#include "workloads/dag/Op.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace memwall {

struct SeqWork {
  int64_t tokens  = 0;    // run through the model this iteration
  int64_t context = 0;    // already in the KV cache
  bool samples    = true; // produces a token (its last prompt chunk, or a decode)
};

struct KernelCost {
  std::string name;
  KernelClass kclass = KernelClass::gemm;
  Dtype dtype        = Dtype::fp16;
  double flops       = 0;
  double bytes       = 0;
  GemmShape shape;                             // gemm: tokens x out, contracted over in
  KernelFamily family = KernelFamily::generic; // elementwise: which fitted curve times it
  bool host_paced     = false;                 // Op::host_paced: an eager engine's launch
};

struct LayerKernels {
  KernelCost qkv, attn, proj, mlp;
  double allreduce_bytes = 0; // after proj and after the MLP when tp > 1
  // Attention data parallelism: the buffer each GPU holds in the dispatch all-to-all and
  // in the combine, its received token-expert pairs x hidden x bytes (dispatched in FP8
  // with a 4-byte scale per 128 elements when the GEMMs run in FP8, as DeepEP does), and
  // what its tp group all-gathers after the combine (tp > 1).
  double dispatch_bytes   = 0;
  double combine_bytes    = 0;
  double moe_gather_bytes = 0;
  double kv_read_bytes    = 0; // KV of the batch's context read by attention
  // The part of attention over KV already cached (decodes, later prefill chunks): what
  // CPU attention (FlexGen's cpu_cache_compute) takes off the GPU when that KV lives in
  // host memory. A prefill's attention over its own new tokens stays on the GPU.
  double cached_pairs    = 0; // query-key pairs whose key is cached
  double cached_kv_bytes = 0; // KV of those keys, read once
  double cached_queries  = 0; // query tokens that see cached keys
};

struct IterationKernels {
  KernelCost embed, head;
  LayerKernels layer; // the same for every layer
  // An engine that launches its own kernels (eager PyTorch), in place of layer's qkv,
  // attn, proj and mlp: each kind of layer's kernels in order (dense or MoE, windowed or
  // not), and the kind each layer is.
  std::vector<std::vector<KernelCost>> eager_layers;
  std::vector<uint8_t> eager_kind;
  const std::vector<KernelCost>* eager_layer(int64_t layer) const
  {
    return eager_layers.empty() ? nullptr : &eager_layers[eager_kind[static_cast<size_t>(layer)]];
  }
  double logits_gather_bytes = 0;                  // tp > 1: vocabulary-parallel logits all-gathered
  double activation_bytes    = 0;                  // peak workspace of the iteration
  int64_t tokens             = 0;                  // the representative rank's (its group's share when d > 1)
  std::vector<KernelCost> eager_embed, eager_head; // the engine's own, in place of embed and head
};

} // namespace memwall

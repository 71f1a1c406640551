#pragma once
// The kernels of one inference iteration as one tensor-parallel rank runs them, for a
// batch of sequences that each bring `tokens` new tokens on top of `context` tokens
// already in the KV cache (a prefill: context 0 or a cached prefix, many tokens; a
// decode: one token on a long context).
//
// Per layer: qkv (with the input norm), the attention core (reads the KV of every
// sequence, writes the new tokens' KV), proj, and the MLP (with the second norm).
// Norms and residual adds are fused into the neighbouring GEMMs as inference engines
// do.
//
// Mixture-of-experts layers: the MLP is the router, the experts the batch's tokens are
// routed to (a GEMM reads the weights of each expert some token picked: for T tokens
// and even routing E (1 - (1 - k/E)^T) of the E experts, all of them for a large batch,
// few in a small decode) and the shared experts. Multi-head latent attention caches
// (kv_lora_rank + qk_rope_head_dim) elements per token and layer, the same on every tp
// rank, and attends in the latent space (DeepSeek-V2 §2.1.3, weights absorbed):
// 2 (2 kv_lora_rank + qk_rope_head_dim) FLOPs per query-key pair and head. A model
// whose layers differ (DeepSeek-V3's dense first layers) is costed as its mean layer:
// the iteration's totals are exact, each layer's share is the average. The GEMMs read
// the weights once per iteration whatever the batch: that is why a small-batch decode is
// bound by HBM bandwidth and a prefill by FLOPs.
//
// Attention data parallelism (ep = tp x d, d > 1): the batch planned is the replica's,
// spread evenly over its d groups; the representative rank runs attention, dense layers,
// the router and shared experts for a d-th of it, and the routed experts it holds (E / ep
// whole ones) for its ep-th of all the replica's token-expert pairs, which reach it and
// go back by all-to-all (each tp rank of a group dispatches a tp-th of the group's tokens,
// then the group all-gathers them: the sequence-parallel form, no token sent twice).
#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/inference/engine/IterationKernels.hpp"
#include "workloads/model/ModelSpec.hpp"

#include <memory>
#include <string>
#include <vector>

namespace memwall {

class InferenceEngine;

class InferenceKernels {
public:
  InferenceKernels(const ModelSpec& m, const InferenceConfig& c);

  IterationKernels plan(const std::vector<SeqWork>& batch) const;
  const InferenceEngine& engine() const { return *engine_; } // inference.engine

  // KV bytes one token takes on one rank, over all layers: 2 (K and V) x layers x
  // KV heads per rank x head_dim x bytes (Kwon et al. 2023); MLA: its latent and rotary key.
  double kv_bytes_per_token() const;
  double layer_weight_bytes() const; // one layer's weights on one rank (the mean layer)
  // Experts of one MoE layer the tokens of an iteration are routed to (even routing).
  double experts_touched(double tokens) const;
  double query_width() const { return q_dim_; }     // query heads x head_dim on one rank
  double kv_width() const { return kv_elems_ / 2; } // K (or V) elements per token on one rank
  double activation_element_bytes() const { return e_; }
  // The MLP's widest intermediate per token on one rank (a MoE layer's: top_k experts').
  double mlp_inner_width() const;
  double weight_bytes() const; // all of one rank's weights
  // Largest activation workspace an iteration of `tokens` tokens over `seqs` sequences needs.
  double activation_bytes(int64_t tokens, int64_t seqs, int64_t longest_context) const;
  // The same iteration run as `parts` GPU batches one after another (FlexGen's zig-zag
  // block): one part's workspace at a time, the residual stream of every part kept (on
  // the GPU but for its offloaded share).
  double activation_bytes(int64_t tokens, int64_t seqs, int64_t longest_context, int64_t parts) const;
  // The residual stream of `tokens` tokens: what a GPU batch keeps while another runs.
  double residual_bytes(int64_t tokens) const { return static_cast<double>(tokens) * h_ * e_; }
  // The part of that stream left on the GPU: FlexGen's activation percent offloads the rest.
  double gpu_residual_bytes(int64_t tokens) const { return (1.0 - c_.act_off.total()) * residual_bytes(tokens); }

private:
  KernelCost gemm(const std::string& name, double tokens, double in, double out) const;
  // The mean layer's MLP (dense and MoE layers in proportion) for the rank's `tokens`,
  // its routed experts taking their share of the `routed` tokens of all ep GPUs' groups.
  KernelCost mlp(double tokens, double routed) const;
  double attention_weights() const; // QKV (MLA: its projections) and output, one rank

  ModelSpec m_;
  InferenceConfig c_;
  std::shared_ptr<const InferenceEngine> engine_;
  double tp_, dp_, expert_div_; // tp; attention data-parallel groups; GPUs one expert layer is spread over
  double h_, out_dim_, q_dim_, kv_elems_, ffn_, vocab_, e_, wb_, kvb_;
  double pair_flops_;     // attention FLOPs per query-key pair on one rank
  double moe_share_;      // MoE layers / layers
  double windowed_share_; // sliding-window layers / layers
  int mlp_mats_;
};

} // namespace memwall

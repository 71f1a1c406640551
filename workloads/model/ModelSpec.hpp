#pragma once
// A transformer model's shape, enough to derive its parameter count, its kernels'
// FLOPs and bytes, and its activation and KV-cache sizes. Dense models leave `moe` and
// `mla` empty; mixture-of-experts layers replace the MLP of some layers, multi-head
// latent attention replaces K and V by one compressed latent per token.
#include <cstdint>
#include <string>

namespace memwall {

enum class MlpKind { gelu, swiglu }; // 2 matrices (GPT, OPT, BERT) or 3 gated (Llama, Mistral, Gemma's GeGLU)
enum class NormKind { layernorm, rmsnorm };

// Mixture of experts (Shazeer et al. 2017; Fedus et al. 2022): a router picks `top_k` of
// `experts` MLPs per token; `shared_experts` run on every token (DeepSeekMoE).
struct MoeSpec {
  int64_t experts         = 0;     // routed experts per MoE layer; 0: a dense model
  int64_t top_k           = 0;     // experts each token is sent to
  int64_t shared_experts  = 0;     // experts every token goes through
  int64_t expert_ffn      = 0;     // inner size of one routed expert
  int64_t shared_ffn      = 0;     // inner size of one shared expert
  int64_t first_k_dense   = 0;     // leading layers with a dense MLP (DeepSeek-V3: 3)
  int64_t layer_freq      = 1;     // after those, every layer_freq-th layer is MoE
  bool expert_biases      = false; // expert linear layers carry biases (gpt-oss)
  bool router_bias        = false; // a learned bias per expert on the router (gpt-oss; DeepSeek's correction bias)
  bool shared_expert_gate = false; // a sigmoid gate on the shared expert (Qwen2-MoE)
  bool normalized_top_k   = false; // a token's top_k weights divided by their sum (Mixtral; Qwen's norm_topk_prob)
  // Routing as it runs: an expert takes at most capacity_factor x an even share of the
  // tokens and drops the rest (0: dropless, Megatron's default); hot_expert_tokens is
  // the share of all tokens the busiest expert is sent (0: an even top_k / experts).
  double capacity_factor   = 0;
  double hot_expert_tokens = 0;
  // Group-limited routing (DeepSeek-V3 §2.1.2, "node-limited"): the experts form
  // expert_groups groups and a token's experts come from groups_per_token of them (0: no limit).
  int64_t expert_groups    = 0;
  int64_t groups_per_token = 0;

  bool enabled() const { return experts > 0; }
};

// Multi-head latent attention (DeepSeek-V2 §2.1): queries through a low-rank
// bottleneck, keys and values rebuilt per head from a kv_lora_rank latent, plus one
// rotary key of qk_rope_head_dim shared by the heads. The KV cache holds the latent
// and the rotary key: (kv_lora_rank + qk_rope_head_dim) elements per token and layer.
struct MlaSpec {
  int64_t q_lora_rank      = 0; // 0: queries projected directly
  int64_t kv_lora_rank     = 0; // 0: not MLA
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim       = 0;

  bool enabled() const { return kv_lora_rank > 0; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

struct ModelSpec {
  std::string name;   // preset id or "custom"
  std::string family; // gpt2, gpt3, llama, mistral, mixtral, qwen3_moe, deepseek_v3, ...
  int64_t layers             = 0;
  int64_t hidden             = 0;
  int64_t heads              = 0;
  int64_t kv_heads           = 0; // < heads for GQA, 1 for MQA
  int64_t head_dim_override  = 0; // a head size other than hidden / heads (Gemma, Qwen3, gpt-oss)
  int64_t ffn_hidden         = 0; // dense MLP inner size
  int64_t vocab              = 0;
  int64_t max_seq_len        = 0;
  MlpKind mlp                = MlpKind::gelu;
  NormKind norm              = NormKind::layernorm;
  bool learned_positions     = true;  // learned position table (GPT, OPT, BERT) vs rotary
  int64_t position_offset    = 0;     // OPT reserves 2 extra position rows
  bool tied_embeddings       = true;  // LM head shares the token embedding
  bool qkv_bias              = true;  // the QKV projection carries a bias (GPT; Qwen2 alone of the Llama-likes)
  bool proj_bias             = true;  // the attention output projection does
  bool mlp_bias              = true;  // the dense MLP's layers do
  bool qk_norm               = false; // a norm over each head's queries and keys (Qwen3, Gemma 3)
  bool fused_projections     = false; // one qkv_proj and one gate_up_proj matrix, sliced (Phi-3)
  double rotary_fraction     = 1;     // of each head's dims rotated (GPT-NeoX's rotary_pct)
  bool parallel_residual     = false; // x + attn(ln1(x)) + mlp(ln2(x)) (GPT-NeoX, GPT-J)
  bool scaled_embedding      = false; // the token embedding times sqrt(hidden) (Gemma)
  double final_logit_softcap = 0;     // logits = cap tanh(logits / cap) before the loss (Gemma 2); 0: none
  int64_t norms_per_layer    = 2;     // 4 with Gemma 2/3's post-attention and post-MLP norms
  bool attention_sinks       = false; // a learned sink logit per head (gpt-oss)
  // Sliding-window attention: window in tokens (0: none); every global_every-th layer
  // attends to the whole context (gpt-oss, Gemma 2: 2; Gemma 3: 6; Mistral 7B v0.1: 0 = all windowed).
  int64_t sliding_window = 0;
  int64_t global_every   = 0;
  bool dropout           = true; // dropout masks are saved for backward
  bool final_norm        = true;
  int64_t extra_params   = 0; // parts outside the decoder stack (BERT pooler, token types)
  MoeSpec moe;
  MlaSpec mla;
  double published_params                 = 0;     // for tests: the size its authors report
  double published_active                 = 0;     // MoE: parameters used per token, as its authors report
  bool published_active_without_embedding = false; // their count leaves the input embedding out
  std::string published_source;

  int64_t head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  int64_t q_dim() const { return heads * (mla.enabled() ? mla.qk_head_dim() : head_dim()); } // query width
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  int64_t attn_out_dim() const { return heads * (mla.enabled() ? mla.v_head_dim : head_dim()); } // projection input
  // Elements of K and V one token stores per layer: 2 kv_dim, or MLA's latent and rotary key.
  double kv_elements_per_token() const
  {
    return mla.enabled() ? static_cast<double>(mla.kv_lora_rank + mla.qk_rope_head_dim) : 2.0 * kv_dim();
  }
  // Whether `layer` attends over a sliding window rather than the whole context.
  bool windowed_layer(int64_t layer) const
  {
    return sliding_window > 0 && (global_every <= 0 || (layer + 1) % global_every != 0);
  }
  // Whether `layer` (from 0) has a mixture-of-experts MLP.
  bool moe_layer(int64_t layer) const
  {
    return moe.enabled() && layer >= moe.first_k_dense && (layer - moe.first_k_dense) % moe.layer_freq == 0;
  }
  int64_t moe_layers() const;
  int64_t windowed_layers() const;
  double norm_params() const { return norm == NormKind::layernorm ? 2.0 * hidden : 1.0 * hidden; }
  double attention_params() const;
  // MLA's parts: the down-projections (with the shared rotary key) and the latents' norms,
  // which every tp rank holds whole, and the up- and output projections, split by heads.
  double mla_down_params() const;
  double mla_norm_params() const;
  double mla_up_params() const;
  double mlp_params() const;           // the dense MLP
  double expert_params() const;        // one routed expert
  double shared_expert_params() const; // all shared experts together
  double router_params() const;
  double layer_norm_params() const { return norms_per_layer * norm_params(); }
  double layer_params(int64_t layer) const;        // everything layer `layer` holds
  double active_layer_params(int64_t layer) const; // what one token's forward uses
  double embedding_params() const;
  double head_params() const { return tied_embeddings ? 0.0 : 1.0 * vocab * hidden; }
  double total_params() const;
  double active_params() const; // per token: routed experts counted top_k times, not `experts`
};

} // namespace memwall

#pragma once
// A transformer model's shape, enough to derive its parameter count, its kernels'
// FLOPs and bytes, and its activation and KV-cache sizes.
#include <cstdint>
#include <string>

namespace memwall {

enum class MlpKind { gelu, swiglu };  // 2 matrices (GPT, OPT, BERT) or 3 (Llama, Mistral)
enum class NormKind { layernorm, rmsnorm };

struct ModelSpec {
  std::string name;   // preset id or "custom"
  std::string family; // gpt2, gpt3, llama, mistral, opt, gpt_neox, bert
  int64_t layers      = 0;
  int64_t hidden      = 0;
  int64_t heads       = 0;
  int64_t kv_heads    = 0; // < heads for GQA, 1 for MQA
  int64_t ffn_hidden  = 0;
  int64_t vocab       = 0;
  int64_t max_seq_len = 0;
  MlpKind mlp          = MlpKind::gelu;
  NormKind norm        = NormKind::layernorm;
  bool learned_positions = true;  // learned position table (GPT, OPT, BERT) vs rotary
  int64_t position_offset = 0;    // OPT reserves 2 extra position rows
  bool tied_embeddings   = true;  // LM head shares the token embedding
  bool biases            = true;  // linear layers carry biases
  bool dropout           = true;  // dropout masks are saved for backward
  bool final_norm        = true;
  int64_t extra_params   = 0;     // parts outside the decoder stack (BERT pooler, token types)
  double published_params = 0;    // for tests: the size its authors report
  std::string published_source;

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  double norm_params() const { return norm == NormKind::layernorm ? 2.0 * hidden : 1.0 * hidden; }
  double attention_params() const;
  double mlp_params() const;
  double layer_params() const { return attention_params() + mlp_params() + 2 * norm_params(); }
  double embedding_params() const;
  double head_params() const { return tied_embeddings ? 0.0 : 1.0 * vocab * hidden; }
  double total_params() const;
};

} // namespace memwall

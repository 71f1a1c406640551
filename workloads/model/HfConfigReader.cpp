// Hugging Face config.json files, one reader per model_type. Each reads the keys its
// transformers class defines; a missing required key or a wrong type is refused with
// the file and the key named. Parameter counts of the fixtures are tested against the
// published sizes (tests/model_presets_test.cpp).
#include "workloads/model/HfConfigReader.hpp"

#include "base/InputError.hpp"
#include "base/JsonInput.hpp"
#include "base/ParamReader.hpp"
#include "base/TextFile.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>

namespace memwall {
namespace {

using nlohmann::json;

class HfConfig {
public:
  HfConfig(json j, std::string path) : j_(std::move(j)), path_(std::move(path)) {}

  int64_t integer(const std::string& key) const
  {
    if (!j_.contains(key) || j_.at(key).is_null())
      throw InputError(path_ + ": missing key '" + key + "' needed for a " + type() + " model");
    return checked(key, j_.at(key));
  }
  int64_t integer_or(const std::string& key, int64_t def) const
  {
    return j_.contains(key) && !j_.at(key).is_null() ? checked(key, j_.at(key)) : def;
  }
  bool flag_or(const std::string& key, bool def) const
  {
    if (!j_.contains(key) || j_.at(key).is_null())
      return def;
    if (!j_.at(key).is_boolean())
      throw InputError(path_ + ": key '" + key + "' must be true or false");
    return j_.at(key).get<bool>();
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const json& raw(const std::string& key) const { return j_.at(key); }
  std::string type() const { return j_.value("model_type", std::string("?")); }
  const std::string& path() const { return path_; }

private:
  int64_t checked(const std::string& key, const json& v) const
  {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0)
      throw InputError(path_ + ": key '" + key + "' must be a positive integer, got " + v.dump());
    return v.get<int64_t>();
  }
  json j_;
  std::string path_;
};

// The sizes under the key names transformers' newer classes share; KV heads (and a
// head size of its own) only where the class has grouped-query attention.
void decoder_sizes(const HfConfig& c, ModelSpec& m, const char* ffn_key, int64_t positions, bool gqa)
{
  m.layers   = c.integer("num_hidden_layers");
  m.hidden   = c.integer("hidden_size");
  m.heads    = c.integer("num_attention_heads");
  m.kv_heads = gqa ? c.integer_or("num_key_value_heads", m.heads) : m.heads;
  if (gqa)
    m.head_dim_override = c.integer_or("head_dim", 0);
  m.ffn_hidden  = c.integer(ffn_key);
  m.vocab       = c.integer("vocab_size");
  m.max_seq_len = c.integer_or("max_position_embeddings", positions);
}

// The decoder every Llama descendant shares: rotary positions, RMSNorm, gated MLP, no
// biases, no dropout.
void llama_base(const HfConfig& c, ModelSpec& m)
{
  decoder_sizes(c, m, "intermediate_size", 4096, true);
  m.mlp               = MlpKind::swiglu;
  m.norm              = NormKind::rmsnorm;
  m.learned_positions = false;
  m.tied_embeddings   = c.flag_or("tie_word_embeddings", false);
  bool bias           = c.flag_or("attention_bias", false);
  m.qkv_bias = m.proj_bias = bias;
  m.mlp_bias               = c.flag_or("mlp_bias", false);
  m.dropout                = false;
}

// Sliding-window attention named by `layer_types` (newer configs), else by a window that
// applies to all layers when `use_sliding_window` is absent or true.
void sliding_window(const HfConfig& c, ModelSpec& m, int64_t global_every)
{
  if (!c.has("sliding_window") || !c.flag_or("use_sliding_window", true))
    return;
  m.sliding_window = c.integer("sliding_window");
  m.global_every   = global_every;
  if (c.has("layer_types") && c.raw("layer_types").is_array()) {
    const json& t  = c.raw("layer_types");
    int64_t global = 0;
    for (const auto& v : t)
      global += v == "full_attention" ? 1 : 0;
    m.global_every = global == 0 ? 0 : static_cast<int64_t>(t.size()) / global;
  }
  if (m.sliding_window >= m.max_seq_len) // a window as long as the context is none
    m.sliding_window = m.global_every = 0;
}

void routed_experts(const HfConfig& c, ModelSpec& m, const char* experts_key, const char* ffn_key)
{
  m.moe.experts    = c.integer(experts_key);
  m.moe.top_k      = c.integer("num_experts_per_tok");
  m.moe.expert_ffn = c.integer(ffn_key);
}

void read_llama(const HfConfig& c, ModelSpec& m)
{
  llama_base(c, m);
  sliding_window(c, m, 0); // Mistral 7B v0.1: every layer windowed
}

void read_mixtral(const HfConfig& c, ModelSpec& m)
{
  read_llama(c, m);
  routed_experts(c, m, "num_local_experts", "intermediate_size");
  m.moe.normalized_top_k = true; // MixtralSparseMoeBlock divides the top-k weights by their sum
}

void read_qwen2(const HfConfig& c, ModelSpec& m)
{
  llama_base(c, m);
  m.qkv_bias = true; // Qwen2's q, k and v projections carry biases, its output projection none
  if (c.flag_or("use_sliding_window", false))
    sliding_window(c, m, 0);
}

void qwen_moe(const HfConfig& c, ModelSpec& m)
{
  routed_experts(c, m, "num_experts", "moe_intermediate_size");
  // transformers: layer i is sparse where (i + 1) % decoder_sparse_step == 0.
  m.moe.layer_freq       = c.integer_or("decoder_sparse_step", 1);
  m.moe.first_k_dense    = m.moe.layer_freq - 1;
  m.moe.normalized_top_k = c.flag_or("norm_topk_prob", false); // the configuration classes' default
  if (c.has("mlp_only_layers") && !c.raw("mlp_only_layers").empty())
    throw InputError(c.path() + ": key 'mlp_only_layers' (dense layers at chosen places) is not supported; "
                                "describe the model with first_k_dense and moe_layer_freq instead");
}

void read_qwen2_moe(const HfConfig& c, ModelSpec& m)
{
  read_qwen2(c, m);
  qwen_moe(c, m);
  if (c.integer_or("shared_expert_intermediate_size", 0) > 0) {
    m.moe.shared_experts     = 1;
    m.moe.shared_ffn         = c.integer("shared_expert_intermediate_size");
    m.moe.shared_expert_gate = true;
  }
}

void read_qwen3(const HfConfig& c, ModelSpec& m)
{
  llama_base(c, m);
  m.qk_norm = true;
  if (c.flag_or("use_sliding_window", false))
    sliding_window(c, m, 0);
}

void read_qwen3_moe(const HfConfig& c, ModelSpec& m)
{
  read_qwen3(c, m);
  qwen_moe(c, m);
}

// Gemma 2 and 3: head_dim of their own, norms after attention and after the MLP too,
// GeGLU (three matrices), tied embeddings; local and global layers alternate.
void read_gemma2(const HfConfig& c, ModelSpec& m)
{
  llama_base(c, m);
  m.tied_embeddings  = c.flag_or("tie_word_embeddings", true);
  m.norms_per_layer  = 4;
  m.scaled_embedding = true;
  m.mlp_bias         = false; // Gemma's MLP never has biases, whatever mlp_bias says
  if (c.has("final_logit_softcapping")) {
    if (!c.raw("final_logit_softcapping").is_number() || c.raw("final_logit_softcapping").get<double>() <= 0)
      throw InputError(c.path() + ": key 'final_logit_softcapping' must be a positive number or null, got " +
                       c.raw("final_logit_softcapping").dump());
    m.final_logit_softcap = c.raw("final_logit_softcapping").get<double>();
  }
  sliding_window(c, m, 2);
}

void read_gemma3_text(const HfConfig& c, ModelSpec& m)
{
  read_gemma2(c, m);
  m.qk_norm = true;
  if (m.sliding_window > 0)
    m.global_every = c.integer_or("sliding_window_pattern", 6);
}

void read_phi3(const HfConfig& c, ModelSpec& m)
{
  llama_base(c, m);
  m.fused_projections = true;
  m.qkv_bias = m.proj_bias = m.mlp_bias = false; // Phi3's Linears never carry biases
  if (c.has("partial_rotary_factor") &&
      (!c.raw("partial_rotary_factor").is_number() || c.raw("partial_rotary_factor").get<double>() != 1.0))
    throw InputError(c.path() + ": key 'partial_rotary_factor' other than 1 (Phi-4-mini's) is not modelled for phi3; "
                                "allowed: 1");
  sliding_window(c, m, 0);
}

void read_deepseek_v3(const HfConfig& c, ModelSpec& m)
{
  llama_base(c, m);
  MlaSpec& a = m.mla;
  // DeepseekV3Config's defaults where a key is absent (q_lora_rank null: no q bottleneck).
  a.q_lora_rank      = c.has("q_lora_rank") ? c.integer_or("q_lora_rank", 0) : 1536;
  a.kv_lora_rank     = c.integer("kv_lora_rank");
  a.qk_nope_head_dim = c.integer("qk_nope_head_dim");
  a.qk_rope_head_dim = c.integer("qk_rope_head_dim");
  a.v_head_dim       = c.integer("v_head_dim");
  routed_experts(c, m, "n_routed_experts", "moe_intermediate_size");
  m.moe.shared_experts   = c.integer_or("n_shared_experts", 1);
  m.moe.shared_ffn       = m.moe.expert_ffn;
  m.moe.first_k_dense    = c.integer_or("first_k_dense_replace", 3);
  m.moe.normalized_top_k = c.flag_or("norm_topk_prob", true); // DeepseekV3Config's default
  m.moe.layer_freq       = c.integer_or("moe_layer_freq", 1);
  // The aux-loss-free balancing keeps a learned bias per expert (e_score_correction_bias).
  m.moe.router_bias = c.has("topk_method") && c.raw("topk_method") == "noaux_tc";
  // Group-limited routing (node-limited in training): n_group groups, topk_group per token.
  if (c.integer_or("n_group", 8) > 1) {
    m.moe.expert_groups    = c.integer_or("n_group", 8);
    m.moe.groups_per_token = c.integer_or("topk_group", 4);
  }
}

void read_gpt_oss(const HfConfig& c, ModelSpec& m)
{
  llama_base(c, m);
  m.qkv_bias = m.proj_bias = c.flag_or("attention_bias", true); // GptOssConfig's default
  m.attention_sinks        = true;
  sliding_window(c, m, 2);
  routed_experts(c, m, "num_local_experts", "intermediate_size");
  m.moe.expert_biases = true;
  m.moe.router_bias   = true;
}

void read_gpt2(const HfConfig& c, ModelSpec& m)
{
  m.layers      = c.integer("n_layer");
  m.hidden      = c.integer("n_embd");
  m.heads       = c.integer("n_head");
  m.kv_heads    = m.heads;
  m.ffn_hidden  = c.integer_or("n_inner", 4 * m.hidden);
  m.vocab       = c.integer("vocab_size");
  m.max_seq_len = c.integer_or("n_positions", 1024);
}

void read_opt(const HfConfig& c, ModelSpec& m)
{
  decoder_sizes(c, m, "ffn_dim", 2048, false);
  m.position_offset = 2;
  m.tied_embeddings = c.flag_or("tie_word_embeddings", true);
}

void read_gpt_neox(const HfConfig& c, ModelSpec& m)
{
  decoder_sizes(c, m, "intermediate_size", 2048, false);
  m.learned_positions = false;
  m.tied_embeddings   = c.flag_or("tie_word_embeddings", false);
  m.parallel_residual = c.flag_or("use_parallel_residual", true);
  m.dropout           = false; // attention_dropout and hidden_dropout default to 0
  if (c.has("rotary_pct")) {
    if (!c.raw("rotary_pct").is_number() || c.raw("rotary_pct").get<double>() <= 0 ||
        c.raw("rotary_pct").get<double>() > 1)
      throw InputError(c.path() + ": key 'rotary_pct' must be a number in (0, 1], got " + c.raw("rotary_pct").dump());
    m.rotary_fraction = c.raw("rotary_pct").get<double>();
  }
}

using Reader = std::function<void(const HfConfig&, ModelSpec&)>;

const std::map<std::string, Reader>& readers()
{
  static const std::map<std::string, Reader> all{{"llama", read_llama},
                                                 {"mistral", read_llama},
                                                 {"mixtral", read_mixtral},
                                                 {"qwen2", read_qwen2},
                                                 {"qwen2_moe", read_qwen2_moe},
                                                 {"qwen3", read_qwen3},
                                                 {"qwen3_moe", read_qwen3_moe},
                                                 {"gemma2", read_gemma2},
                                                 {"gemma3", read_gemma3_text},
                                                 {"gemma3_text", read_gemma3_text},
                                                 {"phi3", read_phi3},
                                                 {"deepseek_v3", read_deepseek_v3},
                                                 {"gpt_oss", read_gpt_oss},
                                                 {"gpt2", read_gpt2},
                                                 {"opt", read_opt},
                                                 {"gpt_neox", read_gpt_neox}};
  return all;
}

} // namespace

std::vector<std::string> hf_model_types()
{
  std::vector<std::string> types;
  for (const auto& [t, r] : readers())
    types.push_back(t);
  return types;
}

ModelSpec read_hf_config(const std::string& path)
{
  std::string in = read_text_file(path, "hf_config file");
  json j;
  if (std::string why = parse_json_checked(in, j); !why.empty())
    throw InputError(path + ": not valid JSON (" + why + ")");
  if (!j.is_object() || !j.contains("model_type") || !j.at("model_type").is_string())
    throw InputError(path + ": not a HuggingFace config.json (no string 'model_type')");
  // A multimodal Gemma 3 keeps its language model's keys under text_config.
  if (j.at("model_type") == "gemma3" && j.contains("text_config") && j.at("text_config").is_object()) {
    json text          = j.at("text_config");
    text["model_type"] = "gemma3";
    j                  = std::move(text);
  }
  HfConfig c(j, path);
  std::string type = c.type();
  auto it          = readers().find(type);
  if (it == readers().end())
    throw InputError(path + ": model_type '" + type + "' is not supported; supported: " + join(hf_model_types()));
  ModelSpec m;
  m.name = std::filesystem::path(path).parent_path().filename().string();
  if (m.name.empty())
    m.name = "hf-" + type;
  m.family = type;
  try {
    it->second(c, m);
  } catch (const json::exception& e) { // a key of the wrong JSON type
    throw InputError(path + ": " + std::string(e.what()));
  }
  if (m.head_dim_override == 0 && m.hidden % m.heads != 0)
    throw InputError(path + ": hidden size " + std::to_string(m.hidden) + " is not divisible by " +
                     std::to_string(m.heads) + " attention heads");
  if (m.heads % m.kv_heads != 0)
    throw InputError(path + ": num_key_value_heads must divide num_attention_heads");
  if (m.moe.enabled() && (m.moe.top_k > m.moe.experts || m.moe.first_k_dense >= m.layers))
    throw InputError(path +
                     ": num_experts_per_tok must be at most the experts, and a dense prefix shorter than the layers");
  return m;
}

} // namespace memwall

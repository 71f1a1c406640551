#include "workloads/model/ModelReader.hpp"

#include "workloads/model/HfConfigReader.hpp"
#include "workloads/model/InputLimits.hpp"
#include "workloads/model/ModelPresets.hpp"

#include <algorithm>
#include <filesystem>
#include <tuple>

namespace memwall {
namespace {

// Mixture-of-experts keys: a dense model gives none but num_experts: 0.
void read_moe(ParamReader& r, ModelSpec& m)
{
  MoeSpec& e = m.moe;
  e.experts =
      r.integer("num_experts", e.experts, "routed experts per MoE layer (0: a dense model)", 0, "", limits::experts);
  const bool moe = e.experts > 0;
  auto key       = [&](const char* k, int64_t def, const char* desc, int64_t min, int64_t max) {
    int64_t v = r.integer(k, def, desc, min, "", max);
    if (!moe && r.has(k))
      r.fail(k, std::string(k) + " is a mixture-of-experts key; the model has no experts (set num_experts)");
    return v;
  };
  e.top_k = key("experts_per_token", moe ? std::max<int64_t>(e.top_k, 1) : 0, "experts each token is routed to (top-k)",
                0, limits::experts);
  e.shared_experts = key("shared_experts", e.shared_experts, "experts every token goes through", 0, limits::experts);
  e.expert_ffn     = key("moe_ffn_hidden", moe && e.expert_ffn == 0 ? m.ffn_hidden : e.expert_ffn,
                         "inner size of one routed expert; default ffn_hidden", 0, limits::width);
  e.shared_ffn     = key("shared_ffn_hidden", e.shared_ffn > 0 ? e.shared_ffn : e.expert_ffn,
                         "inner size of one shared expert; default moe_ffn_hidden", 0, limits::width);
  e.first_k_dense  = key("first_k_dense", e.first_k_dense, "leading layers with a dense MLP", 0, limits::layers);
  e.layer_freq     = key("moe_layer_freq", e.layer_freq, "after those, every n-th layer is MoE", 1, limits::layers);
  e.capacity_factor =
      r.number("capacity_factor", e.capacity_factor,
               "tokens an expert takes, as a multiple of an even share; more are dropped (0: dropless)", 0.0, 1e3);
  e.hot_expert_tokens =
      r.number("hot_expert_tokens", e.hot_expert_tokens,
               "share of the tokens routed to the busiest expert (0: an even k / num_experts)", 0.0, 1.0);
  e.expert_groups =
      key("expert_groups", e.expert_groups,
          "group-limited routing: groups the experts are split into (DeepSeek's n_group; 0: none)", 0, limits::experts);
  e.groups_per_token =
      key("groups_per_token", e.groups_per_token,
          "group-limited routing: groups a token's experts may come from (DeepSeek's topk_group)", 0, limits::experts);
  e.normalized_top_k = r.flag("norm_topk_prob", e.normalized_top_k,
                              "a token's top-k routing weights divided by their sum (transformers' norm_topk_prob; "
                              "Mixtral always)");
  if (!moe && r.has("norm_topk_prob"))
    r.fail("norm_topk_prob", "norm_topk_prob is a mixture-of-experts key; the model has no experts (set num_experts)");
  for (const char* k : {"capacity_factor", "hot_expert_tokens"})
    if (!moe && r.has(k))
      r.fail(k, std::string(k) + " is a mixture-of-experts key; the model has no experts (set num_experts)");
  if (!moe)
    return;
  if (e.top_k < 1 || e.top_k > e.experts)
    r.fail("experts_per_token", "experts_per_token = " + std::to_string(e.top_k) + " must be 1.." +
                                    std::to_string(e.experts) + " (num_experts)");
  if (e.expert_ffn < 1)
    r.fail("moe_ffn_hidden", "an MoE model needs moe_ffn_hidden >= 1");
  if (e.first_k_dense >= m.layers)
    r.fail("first_k_dense", "first_k_dense = " + std::to_string(e.first_k_dense) + " leaves no MoE layer of " +
                                std::to_string(m.layers));
  if (e.expert_groups > 0 &&
      (e.experts % e.expert_groups != 0 || e.groups_per_token < 1 || e.groups_per_token > e.expert_groups ||
       e.top_k > e.groups_per_token * (e.experts / e.expert_groups)))
    r.fail("expert_groups", "expert_groups = " + std::to_string(e.expert_groups) + " must divide the " +
                                std::to_string(e.experts) + " experts, with groups_per_token in 1..expert_groups " +
                                "holding at least experts_per_token experts");
  if (e.expert_groups == 0 && e.groups_per_token > 0)
    r.fail("groups_per_token", "groups_per_token needs expert_groups");
  double even = static_cast<double>(e.top_k) / static_cast<double>(e.experts);
  if (e.hot_expert_tokens > 0 && e.hot_expert_tokens < even)
    r.fail("hot_expert_tokens",
           "hot_expert_tokens = " + std::to_string(e.hot_expert_tokens) +
               " is below the even share experts_per_token / num_experts = " + std::to_string(even));
}

// Multi-head latent attention: all of kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim
// and v_head_dim, or none.
void read_mla(ParamReader& r, ModelSpec& m)
{
  MlaSpec& a = m.mla;
  a.kv_lora_rank =
      r.integer("kv_lora_rank", a.kv_lora_rank,
                "multi-head latent attention: width of the compressed KV latent (0: not MLA)", 0, "", limits::width);
  const bool mla = a.kv_lora_rank > 0;
  auto key       = [&](const char* k, int64_t def, const char* desc) {
    int64_t v = r.integer(k, def, desc, 0, "", limits::width);
    if (!mla && r.has(k))
      r.fail(k, std::string(k) + " is a multi-head latent attention key; set kv_lora_rank");
    return v;
  };
  a.q_lora_rank      = key("q_lora_rank", a.q_lora_rank, "MLA: width of the query bottleneck (0: none)");
  a.qk_rope_head_dim = key("qk_rope_head_dim", a.qk_rope_head_dim, "MLA: rotary part of each query and key head");
  a.qk_nope_head_dim = key("qk_nope_head_dim", a.qk_nope_head_dim, "MLA: non-rotary part of each query and key head");
  a.v_head_dim       = key("v_head_dim", a.v_head_dim, "MLA: size of each value head");
  if (mla && (a.qk_nope_head_dim < 1 || a.v_head_dim < 1))
    r.fail("kv_lora_rank", "multi-head latent attention needs qk_nope_head_dim and v_head_dim >= 1");
}

} // namespace

ModelSpec read_model_section(ParamReader& r, const std::string& spec_dir)
{
  std::string preset = r.text("preset", "", "model preset id (see `memwall list models`)");
  std::string hf =
      r.text("hf_config", "", "path to a HuggingFace config.json (see `memwall list models` for the model types read)");
  if (!preset.empty() && !hf.empty())
    r.fail("hf_config", "give either preset or hf_config, not both");
  ModelSpec m;
  bool based = true;
  if (!preset.empty()) {
    m = model_preset(preset, r.location("preset"));
  } else if (!hf.empty()) {
    std::filesystem::path p(hf);
    if (p.is_relative() && !spec_dir.empty())
      p = std::filesystem::path(spec_dir) / p;
    try {
      m = read_hf_config(p.string());
    } catch (const InputError& e) {
      throw InputError(r.location("hf_config") + ": " + e.what());
    }
  } else {
    based    = false;
    m.name   = "custom";
    m.family = "gpt";
  }
  auto dim = [&](const char* key, int64_t base, const char* desc, int64_t max) {
    return based ? r.integer(key, base, desc, 1, "", max) : r.required_integer(key, desc, 1, max);
  };
  m.layers   = dim("layers", m.layers, "transformer layers", limits::layers);
  m.hidden   = dim("hidden", m.hidden, "hidden size h", limits::width);
  m.heads    = dim("heads", m.heads, "attention heads a", limits::heads);
  m.kv_heads = r.integer("kv_heads", based ? m.kv_heads : m.heads, "key/value heads (GQA/MQA); default: heads", 1, "",
                         limits::heads);
  m.ffn_hidden =
      r.integer("ffn_hidden", based ? m.ffn_hidden : 4 * m.hidden, "MLP inner size; default 4h", 1, "", limits::width);
  m.vocab         = dim("vocab", m.vocab, "vocabulary size V", limits::vocab);
  m.max_seq_len   = r.integer("max_seq_len", based ? m.max_seq_len : 2048, "longest sequence the model accepts", 1, "",
                              limits::tokens);
  std::string mlp = r.choice("mlp", m.mlp == MlpKind::swiglu ? "swiglu" : "gelu", {"gelu", "swiglu"},
                             "MLP form: 2 matrices with GELU or 3 with SwiGLU");
  m.mlp           = mlp == "swiglu" ? MlpKind::swiglu : MlpKind::gelu;
  m.dropout       = r.flag("dropout", m.dropout, "dropout layers whose masks are saved for backward");
  m.tied_embeddings = r.flag("tied_embeddings", m.tied_embeddings, "LM head shares the token embedding");
  m.head_dim_override =
      r.integer("head_dim", m.head_dim_override, "size of one attention head", 0, "hidden / heads", limits::width);
  m.sliding_window =
      r.integer("sliding_window", m.sliding_window,
                "tokens a windowed layer attends to (0: every layer sees the whole context)", 0, "", limits::tokens);
  m.global_every = r.integer("global_every", m.global_every,
                             "with sliding_window: every n-th layer attends globally (0: none)", 0, "", limits::layers);
  read_moe(r, m);
  read_mla(r, m);
  // A HuggingFace config's sizes did not pass through the reads above: same limits,
  // every one of them (head_dim 2^62 from a config ran, fit and took 0.24 ms).
  for (auto [key, v, max] : {std::tuple{"layers", m.layers, limits::layers},
                             {"hidden", m.hidden, limits::width},
                             {"heads", m.heads, limits::heads},
                             {"kv_heads", m.kv_heads, limits::heads},
                             {"ffn_hidden", m.ffn_hidden, limits::width},
                             {"vocab", m.vocab, limits::vocab},
                             {"max_seq_len", m.max_seq_len, limits::tokens},
                             {"head_dim", m.head_dim_override, limits::width},
                             {"sliding_window", m.sliding_window, limits::tokens},
                             {"global_every", m.global_every, limits::layers},
                             {"num_experts", m.moe.experts, limits::experts},
                             {"experts_per_token", m.moe.top_k, limits::experts},
                             {"shared_experts", m.moe.shared_experts, limits::experts},
                             {"moe_ffn_hidden", m.moe.expert_ffn, limits::width},
                             {"shared_ffn_hidden", m.moe.shared_ffn, limits::width},
                             {"first_k_dense", m.moe.first_k_dense, limits::layers},
                             {"moe_layer_freq", m.moe.layer_freq, limits::layers},
                             {"expert_groups", m.moe.expert_groups, limits::experts},
                             {"groups_per_token", m.moe.groups_per_token, limits::experts},
                             {"kv_lora_rank", m.mla.kv_lora_rank, limits::width},
                             {"q_lora_rank", m.mla.q_lora_rank, limits::width},
                             {"qk_rope_head_dim", m.mla.qk_rope_head_dim, limits::width},
                             {"qk_nope_head_dim", m.mla.qk_nope_head_dim, limits::width},
                             {"v_head_dim", m.mla.v_head_dim, limits::width}})
    if (v > max)
      r.fail(r.has("hf_config") ? "hf_config" : key,
             std::string(key) + " = " + std::to_string(v) + " exceeds the limit of " + std::to_string(max));
  if (m.head_dim_override == 0 && m.hidden % m.heads != 0)
    r.fail("heads", std::to_string(m.heads) + " heads do not divide hidden size " + std::to_string(m.hidden) +
                        " (give head_dim for a head size of its own)");
  if (m.heads % m.kv_heads != 0)
    r.fail("kv_heads", std::to_string(m.kv_heads) + " kv_heads do not divide " + std::to_string(m.heads) + " heads");
  for (const char* k :
       {"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "num_experts", "experts_per_token",
        "shared_experts", "moe_ffn_hidden", "shared_ffn_hidden", "first_k_dense", "moe_layer_freq", "kv_lora_rank",
        "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"})
    if (r.has(k))
      m.published_params = m.published_active = 0; // a modified preset no longer has a published size
  r.finish();
  return m;
}

} // namespace memwall

#include "workloads/model/ModelPresets.hpp"

#include "base/ParamReader.hpp"

#include <vector>

namespace memwall {
namespace {

struct Shape {
  int64_t layers, hidden, heads, kv_heads, ffn, vocab, max_seq;
};

ModelSpec gpt_like(const std::string& name, const std::string& family, Shape s, double published,
                   const std::string& source)
{
  ModelSpec m;
  m.name             = name;
  m.family           = family;
  m.layers           = s.layers;
  m.hidden           = s.hidden;
  m.heads            = s.heads;
  m.kv_heads         = s.kv_heads;
  m.ffn_hidden       = s.ffn;
  m.vocab            = s.vocab;
  m.max_seq_len      = s.max_seq;
  m.published_params = published;
  m.published_source = source;
  return m;
}

ModelSpec llama_like(const std::string& name, const std::string& family, Shape s, double published,
                     const std::string& source)
{
  ModelSpec m         = gpt_like(name, family, s, published, source);
  m.mlp               = MlpKind::swiglu;
  m.norm              = NormKind::rmsnorm;
  m.learned_positions = false;
  m.tied_embeddings   = false;
  m.qkv_bias = m.proj_bias = m.mlp_bias = false;
  m.dropout                             = false;
  return m;
}

// A Llama-like decoder whose MLPs are `experts` routed experts of inner size `ffn`, top_k per token.
ModelSpec moe_like(const std::string& name, const std::string& family, Shape s, int64_t experts, int64_t top_k,
                   double published, double active, const std::string& source)
{
  ModelSpec m        = llama_like(name, family, s, published, source);
  m.moe.experts      = experts;
  m.moe.top_k        = top_k;
  m.moe.expert_ffn   = s.ffn;
  m.published_active = active;
  // MixtralSparseMoeBlock always divides the top-k weights by their sum; the released
  // Qwen3-MoE configs set norm_topk_prob, DeepSeek-V3's too.
  m.moe.normalized_top_k = family == "mixtral" || family == "qwen3_moe" || family == "deepseek_v3";
  return m;
}

ModelSpec qwen3_moe(const std::string& name, Shape s, int64_t expert_ffn, double published, double active)
{
  ModelSpec m         = moe_like(name, "qwen3_moe", s, 128, 8, published, active,
                                 "Qwen3 model card (" + name + "): total and activated parameters");
  m.head_dim_override = 128;
  m.qk_norm           = true;
  m.moe.expert_ffn    = expert_ffn;
  return m;
}

ModelSpec deepseek_v3()
{
  // config.json of deepseek-ai/DeepSeek-V3; the 14B multi-token-prediction module of
  // the released checkpoint (685B) is not part of the 671B.
  ModelSpec m = moe_like("deepseek-v3", "deepseek_v3", {61, 7168, 128, 128, 18432, 129280, 163840}, 256, 8, 671e9, 37e9,
                         "DeepSeek-V3 Technical Report (2024), abstract: 671B total, 37B activated per token");
  m.mla       = MlaSpec{1536, 512, 128, 64, 128};
  m.moe.shared_experts = 1;
  m.moe.expert_ffn = m.moe.shared_ffn = 2048;
  m.moe.first_k_dense                 = 3;
  m.moe.router_bias                   = true; // aux-loss-free balancing's per-expert bias
  m.moe.expert_groups                 = 8;    // node-limited routing: a token's 8 experts from 4 of 8 groups
  m.moe.groups_per_token              = 4;
  return m;
}

ModelSpec gpt_oss_120b()
{
  ModelSpec m = moe_like("gpt-oss-120b", "gpt_oss", {36, 2880, 64, 8, 2880, 201088, 131072}, 128, 4, 116.83e9, 5.13e9,
                         "gpt-oss-120b model card (OpenAI 2025), Table 1: 116.83B total, 5.13B active");
  m.head_dim_override = 64;
  m.qkv_bias = m.proj_bias = true;
  m.attention_sinks        = true;
  m.sliding_window         = 128; // alternating with full attention
  m.global_every           = 2;
  m.moe.expert_biases = m.moe.router_bias = true;
  m.published_active_without_embedding    = true; // the model card counts the unembedding, not the embedding
  return m;
}

ModelSpec opt(const std::string& name, Shape s, double published, const std::string& source)
{
  ModelSpec m       = gpt_like(name, "opt", s, published, source);
  m.position_offset = 2; // OPT's learned positions carry 2 extra rows
  return m;
}

ModelSpec model_preset_from(const std::vector<ModelSpec>& v, const std::string& id)
{
  for (const auto& m : v)
    if (m.name == id)
      return m;
  return {};
}

const std::vector<ModelSpec>& presets()
{
  // Published sizes: the count the model's authors or its released checkpoint report.
  static const std::vector<ModelSpec> all = [] {
    std::vector<ModelSpec> v;
    v.push_back(gpt_like("gpt2", "gpt2", {12, 768, 12, 12, 3072, 50257, 1024}, 124.44e6,
                         "GPT-2 small checkpoint: 124,439,808 parameters (HF gpt2)"));
    v.push_back(gpt_like("gpt2-medium", "gpt2", {24, 1024, 16, 16, 4096, 50257, 1024}, 354.8e6,
                         "GPT-2 medium checkpoint: 355M (HF gpt2-medium)"));
    v.push_back(gpt_like("gpt2-large", "gpt2", {36, 1280, 20, 20, 5120, 50257, 1024}, 774.0e6,
                         "GPT-2 large checkpoint: 774M (HF gpt2-large)"));
    v.push_back(gpt_like("gpt2-xl", "gpt2", {48, 1600, 25, 25, 6400, 50257, 1024}, 1557.6e6,
                         "GPT-2 XL checkpoint: 1.5B, 1,557,611,200 (HF gpt2-xl)"));
    v.push_back(gpt_like("gpt3-175b", "gpt3", {96, 12288, 96, 96, 49152, 50257, 2048}, 175.0e9,
                         "Brown et al. 2020, Table 2.1: 175.0B"));
    v.push_back(gpt_like("megatron-1t", "gpt3", {128, 25600, 160, 160, 102400, 51200, 2048}, 1008.0e9,
                         "Narayanan et al. SC'21, Table 1: 1008 B (128 layers, h 25600, 160 heads)"));
    v.push_back(llama_like("llama-2-7b", "llama", {32, 4096, 32, 32, 11008, 32000, 4096}, 6.74e9,
                           "Llama 2 7B checkpoint: 6,738,415,616"));
    v.push_back(llama_like("llama-2-13b", "llama", {40, 5120, 40, 40, 13824, 32000, 4096}, 13.0e9,
                           "Llama 2 13B checkpoint: 13,015,864,320"));
    v.push_back(llama_like("llama-2-70b", "llama", {80, 8192, 64, 8, 28672, 32000, 4096}, 68.98e9,
                           "Llama 2 70B checkpoint: 68,976,648,192"));
    v.push_back(llama_like("llama-3-8b", "llama", {32, 4096, 32, 8, 14336, 128256, 8192}, 8.03e9,
                           "Llama 3 8B checkpoint: 8,030,261,248"));
    v.push_back(llama_like("llama-3-70b", "llama", {80, 8192, 64, 8, 28672, 128256, 8192}, 70.55e9,
                           "Llama 3 70B checkpoint: 70,553,706,496"));
    v.push_back(llama_like("llama-3-405b", "llama", {126, 16384, 128, 8, 53248, 128256, 131072}, 405.85e9,
                           "Llama 3.1 405B checkpoint: 405,853,388,800"));
    ModelSpec l31 = model_preset_from(v, "llama-3-405b");
    l31.name      = "llama-3.1-405b";
    v.push_back(l31);
    v.push_back(llama_like("mistral-7b", "mistral", {32, 4096, 32, 8, 14336, 32000, 32768}, 7.24e9,
                           "Mistral 7B v0.1 checkpoint: 7,241,732,096"));
    v.push_back(opt("opt-6.7b", {32, 4096, 32, 32, 16384, 50272, 2048}, 6.66e9, "OPT-6.7B checkpoint: 6,658,473,984"));
    v.push_back(opt("opt-13b", {40, 5120, 40, 40, 20480, 50272, 2048}, 12.85e9, "OPT-13B checkpoint: 12,853,473,280"));
    v.push_back(opt("opt-30b", {48, 7168, 56, 56, 28672, 50272, 2048}, 29.97e9, "OPT-30B checkpoint: 29,974,540,288"));
    v.push_back(opt("opt-66b", {64, 9216, 72, 72, 36864, 50272, 2048}, 65.7e9, "OPT-66B checkpoint: 65.7B"));
    v.push_back(opt("opt-175b", {96, 12288, 96, 96, 49152, 50272, 2048}, 175.0e9, "Zhang et al. 2022: 175B"));
    v.push_back(
        moe_like("mixtral-8x7b", "mixtral", {32, 4096, 32, 8, 14336, 32000, 32768}, 8, 2, 46.7e9, 12.9e9,
                 "Mixtral of Experts (Jiang et al. 2024) and Mistral's announcement: 46.7B total, 12.9B active"));
    v.push_back(moe_like("mixtral-8x22b", "mixtral", {56, 6144, 48, 8, 16384, 32768, 65536}, 8, 2, 141e9, 39e9,
                         "Mistral's Mixtral 8x22B announcement (2024): 141B total, 39B active"));
    v.push_back(deepseek_v3());
    v.push_back(qwen3_moe("qwen3-30b-a3b", {48, 2048, 32, 4, 6144, 151936, 40960}, 768, 30.5e9, 3.3e9));
    v.push_back(qwen3_moe("qwen3-235b-a22b", {94, 4096, 64, 4, 12288, 151936, 40960}, 1536, 235e9, 22e9));
    v.push_back(gpt_oss_120b());
    ModelSpec bert    = gpt_like("bert-large", "bert", {24, 1024, 16, 16, 4096, 30522, 512}, 336e6,
                                 "BERT-large uncased model card: 336M");
    bert.final_norm   = false;                                    // post-LN: the last layer ends with its own norm
    bert.extra_params = 2 * 1024 + 2 * 1024 + 1024 * 1024 + 1024; // token types, embedding LN, pooler
    v.push_back(bert);
    return v;
  }();
  return all;
}

} // namespace

std::vector<std::string> model_preset_ids()
{
  std::vector<std::string> ids;
  for (const auto& m : presets())
    ids.push_back(m.name);
  return ids;
}

ModelSpec model_preset(const std::string& id, const std::string& where)
{
  for (const auto& m : presets())
    if (m.name == id)
      return m;
  throw_unknown_preset("model preset", id, model_preset_ids(), where, "models");
}

} // namespace memwall

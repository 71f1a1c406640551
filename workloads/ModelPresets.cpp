#include "ModelPresets.hpp"

#include "ParamReader.hpp"

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
  m.name = name;
  m.family = family;
  m.layers = s.layers;
  m.hidden = s.hidden;
  m.heads = s.heads;
  m.kv_heads = s.kv_heads;
  m.ffn_hidden = s.ffn;
  m.vocab = s.vocab;
  m.max_seq_len = s.max_seq;
  m.published_params = published;
  m.published_source = source;
  return m;
}

ModelSpec llama_like(const std::string& name, const std::string& family, Shape s, double published,
                     const std::string& source)
{
  ModelSpec m = gpt_like(name, family, s, published, source);
  m.mlp = MlpKind::swiglu;
  m.norm = NormKind::rmsnorm;
  m.learned_positions = false;
  m.tied_embeddings = false;
  m.biases = false;
  m.dropout = false;
  return m;
}

ModelSpec opt(const std::string& name, Shape s, double published, const std::string& source)
{
  ModelSpec m = gpt_like(name, "opt", s, published, source);
  m.position_offset = 2; // OPT's learned positions carry 2 extra rows
  return m;
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
    v.push_back(llama_like("mistral-7b", "mistral", {32, 4096, 32, 8, 14336, 32000, 32768}, 7.24e9,
                           "Mistral 7B v0.1 checkpoint: 7,241,732,096"));
    v.push_back(opt("opt-6.7b", {32, 4096, 32, 32, 16384, 50272, 2048}, 6.66e9, "OPT-6.7B checkpoint: 6,658,473,984"));
    v.push_back(opt("opt-13b", {40, 5120, 40, 40, 20480, 50272, 2048}, 12.85e9, "OPT-13B checkpoint: 12,853,473,280"));
    v.push_back(opt("opt-30b", {48, 7168, 56, 56, 28672, 50272, 2048}, 29.97e9, "OPT-30B checkpoint: 29,974,540,288"));
    v.push_back(opt("opt-66b", {64, 9216, 72, 72, 36864, 50272, 2048}, 65.7e9, "OPT-66B checkpoint: 65.7B"));
    v.push_back(opt("opt-175b", {96, 12288, 96, 96, 49152, 50272, 2048}, 175.0e9, "Zhang et al. 2022: 175B"));
    ModelSpec bert = gpt_like("bert-large", "bert", {24, 1024, 16, 16, 4096, 30522, 512}, 336e6,
                              "BERT-large uncased model card: 336M");
    bert.final_norm = false;                        // post-LN: the last layer ends with its own norm
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

#include "HfConfigReader.hpp"

#include "InputError.hpp"
#include "TextFile.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace memwall {
namespace {

using nlohmann::json;

class HfConfig {
public:
  HfConfig(json j, std::string path) : j_(std::move(j)), path_(std::move(path)) {}

  int64_t integer(const std::string& key) const
  {
    if (!j_.contains(key))
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
  std::string type() const { return j_.value("model_type", std::string("?")); }

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

} // namespace

ModelSpec read_hf_config(const std::string& path)
{
  std::string in = read_text_file(path, "hf_config file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e400
    throw InputError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object() || !j.contains("model_type") || !j.at("model_type").is_string())
    throw InputError(path + ": not a HuggingFace config.json (no string 'model_type')");
  HfConfig c(j, path);
  std::string type = c.type();
  ModelSpec m;
  m.name = std::filesystem::path(path).parent_path().filename().string();
  if (m.name.empty())
    m.name = "hf-" + type;
  m.family = type;
  if (type == "llama" || type == "mistral") {
    m.layers = c.integer("num_hidden_layers");
    m.hidden = c.integer("hidden_size");
    m.heads = c.integer("num_attention_heads");
    m.kv_heads = c.integer_or("num_key_value_heads", m.heads);
    m.ffn_hidden = c.integer("intermediate_size");
    m.vocab = c.integer("vocab_size");
    m.max_seq_len = c.integer_or("max_position_embeddings", 4096);
    m.mlp = MlpKind::swiglu;
    m.norm = NormKind::rmsnorm;
    m.learned_positions = false;
    m.tied_embeddings = c.flag_or("tie_word_embeddings", false);
    m.biases = c.flag_or("attention_bias", false);
    m.dropout = false;
  } else if (type == "gpt2") {
    m.layers = c.integer("n_layer");
    m.hidden = c.integer("n_embd");
    m.heads = c.integer("n_head");
    m.kv_heads = m.heads;
    m.ffn_hidden = c.integer_or("n_inner", 4 * m.hidden);
    m.vocab = c.integer("vocab_size");
    m.max_seq_len = c.integer_or("n_positions", 1024);
  } else if (type == "opt") {
    m.layers = c.integer("num_hidden_layers");
    m.hidden = c.integer("hidden_size");
    m.heads = c.integer("num_attention_heads");
    m.kv_heads = m.heads;
    m.ffn_hidden = c.integer("ffn_dim");
    m.vocab = c.integer("vocab_size");
    m.max_seq_len = c.integer_or("max_position_embeddings", 2048);
    m.position_offset = 2;
    m.tied_embeddings = c.flag_or("tie_word_embeddings", true);
  } else if (type == "gpt_neox") {
    m.layers = c.integer("num_hidden_layers");
    m.hidden = c.integer("hidden_size");
    m.heads = c.integer("num_attention_heads");
    m.kv_heads = m.heads;
    m.ffn_hidden = c.integer("intermediate_size");
    m.vocab = c.integer("vocab_size");
    m.max_seq_len = c.integer_or("max_position_embeddings", 2048);
    m.learned_positions = false;
    m.tied_embeddings = c.flag_or("tie_word_embeddings", false);
  } else {
    throw InputError(path + ": model_type '" + type + "' is not supported; supported: llama, mistral, gpt2, opt, gpt_neox");
  }
  if (m.hidden % m.heads != 0)
    throw InputError(path + ": hidden size " + std::to_string(m.hidden) + " is not divisible by " +
                     std::to_string(m.heads) + " attention heads");
  if (m.heads % m.kv_heads != 0)
    throw InputError(path + ": num_key_value_heads must divide num_attention_heads");
  return m;
}

} // namespace memwall

#include "ModelReader.hpp"

#include "HfConfigReader.hpp"
#include "InputLimits.hpp"
#include "ModelPresets.hpp"

#include <filesystem>
#include <tuple>

namespace memwall {

ModelSpec read_model_section(ParamReader& r, const std::string& spec_dir)
{
  std::string preset = r.text("preset", "", "model preset id (see `memwall list models`)");
  std::string hf     = r.text("hf_config", "", "path to a HuggingFace config.json (llama, mistral, gpt2, opt, gpt_neox)");
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
    based  = false;
    m.name = "custom";
    m.family = "gpt";
  }
  auto dim = [&](const char* key, int64_t base, const char* desc, int64_t max) {
    return based ? r.integer(key, base, desc, 1, "", max) : r.required_integer(key, desc, 1, max);
  };
  m.layers     = dim("layers", m.layers, "transformer layers", limits::layers);
  m.hidden     = dim("hidden", m.hidden, "hidden size h", limits::width);
  m.heads      = dim("heads", m.heads, "attention heads a", limits::heads);
  m.kv_heads   = r.integer("kv_heads", based ? m.kv_heads : m.heads, "key/value heads (GQA/MQA); default: heads", 1, "",
                           limits::heads);
  m.ffn_hidden = r.integer("ffn_hidden", based ? m.ffn_hidden : 4 * m.hidden, "MLP inner size; default 4h", 1, "",
                           limits::width);
  m.vocab      = dim("vocab", m.vocab, "vocabulary size V", limits::vocab);
  m.max_seq_len = r.integer("max_seq_len", based ? m.max_seq_len : 2048, "longest sequence the model accepts", 1, "",
                            limits::tokens);
  std::string mlp = r.choice("mlp", m.mlp == MlpKind::swiglu ? "swiglu" : "gelu", {"gelu", "swiglu"},
                             "MLP form: 2 matrices with GELU or 3 with SwiGLU");
  m.mlp = mlp == "swiglu" ? MlpKind::swiglu : MlpKind::gelu;
  m.dropout = r.flag("dropout", m.dropout, "dropout layers whose masks are saved for backward");
  m.tied_embeddings = r.flag("tied_embeddings", m.tied_embeddings, "LM head shares the token embedding");
  // A HuggingFace config's sizes did not pass through the reads above: same limits.
  for (auto [key, v, max] : {std::tuple{"layers", m.layers, limits::layers}, {"hidden", m.hidden, limits::width},
                             {"heads", m.heads, limits::heads}, {"kv_heads", m.kv_heads, limits::heads},
                             {"ffn_hidden", m.ffn_hidden, limits::width}, {"vocab", m.vocab, limits::vocab},
                             {"max_seq_len", m.max_seq_len, limits::tokens}})
    if (v > max)
      r.fail(r.has("hf_config") ? "hf_config" : key, std::string(key) + " = " + std::to_string(v) +
                                                         " exceeds the limit of " + std::to_string(max));
  if (m.hidden % m.heads != 0)
    r.fail("heads", std::to_string(m.heads) + " heads do not divide hidden size " + std::to_string(m.hidden));
  if (m.heads % m.kv_heads != 0)
    r.fail("kv_heads", std::to_string(m.kv_heads) + " kv_heads do not divide " + std::to_string(m.heads) + " heads");
  if (r.has("layers") || r.has("hidden") || r.has("heads") || r.has("ffn_hidden") || r.has("vocab"))
    m.published_params = 0; // a modified preset no longer has a published size
  r.finish();
  return m;
}

} // namespace memwall

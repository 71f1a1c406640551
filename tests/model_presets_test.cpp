// Model presets and HuggingFace configs against published parameter counts.
#include "base/InputError.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/model/ModelPresets.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

TEST_CASE("parameter_count_of_each_preset_matches_its_published_size_within_1_percent", "[models]")
{
  // Published sizes (their sources are in ModelPresets.cpp, beside each preset).
  for (const auto& id : model_preset_ids()) {
    ModelSpec m = model_preset(id);
    INFO(id << ": " << m.total_params() << " vs " << m.published_params << " (" << m.published_source << ")");
    REQUIRE(m.published_params > 0);
    CHECK(std::abs(m.total_params() - m.published_params) / m.published_params < 0.01);
  }
}

TEST_CASE("gpt3_175b_parameter_count_follows_narayanan_12lh2_formula", "[models]")
{
  // Narayanan et al. SC'21: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)).
  ModelSpec m = model_preset("gpt3-175b");
  double l = 96, h = 12288, V = 50257, s = 2048;
  CHECK(m.total_params() == Approx(12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))).epsilon(0.001));
}

TEST_CASE("an_hf_llama_config_reads_as_the_llama_2_7b_preset", "[models]")
{
  std::string path = temp_path("llama-2-7b-config.json");
  // The released config.json of Llama-2-7b-hf, keys memwall ignores included.
  write_file(path, R"({"architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
    "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": null, "tie_word_embeddings": false, "torch_dtype": "float16",
    "transformers_version": "4.31.0.dev0", "use_cache": true, "vocab_size": 32000})");
  ModelSpec m = read_hf_config(path);
  CHECK(m.total_params() == 6738415616.0);
  CHECK(m.total_params() == model_preset("llama-2-7b").total_params());
}

TEST_CASE("an_hf_gpt2_config_reads_gpt2_small", "[models]")
{
  std::string path = temp_path("gpt2-config.json");
  write_file(path, R"({"model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12,
    "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new"})");
  CHECK(read_hf_config(path).total_params() == 124439808.0);
}

TEST_CASE("an_hf_config_with_an_unsupported_model_type_is_refused_by_name", "[models]")
{
  std::string path = temp_path("t5-config.json");
  write_file(path, R"({"model_type": "t5", "d_model": 512})");
  CHECK_THROWS_WITH(read_hf_config(path), Catch::Contains("model_type 't5' is not supported"));
}

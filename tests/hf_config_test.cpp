// Hugging Face config.json fixtures (tests/data/hf_configs, from the released models'
// model cards) against the parameter counts their authors publish, and the MoE and MLA
// presets against hand counts written out term by term.
#include "base/InputError.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/model/ModelPresets.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

ModelSpec fixture(const std::string& name)
{
  return read_hf_config(source_path("tests/data/hf_configs/" + name + "/config.json"));
}

} // namespace

TEST_CASE("each_hf_model_type_reads_to_its_published_parameter_count", "[models][hf]")
{
  struct Case {
    const char* dir;
    double published; // the released checkpoint's count (safetensors metadata / model card)
  };
  // Exact counts of the released checkpoints (Hugging Face safetensors totals); the
  // multi-token-prediction layer of DeepSeek-V3 (14B of its 685B) is not part of the model.
  const Case cases[] = {
      {"Llama-3.1-8B", 8030261248.0},           // Llama 3.1 8B: 8,030,261,248
      {"Mistral-7B-v0.1", 7241732096.0},        // Mistral 7B v0.1: 7,241,732,096
      {"Mixtral-8x7B-v0.1", 46702792704.0},     // Mixtral 8x7B: 46,702,792,704
      {"Qwen2-7B", 7615616512.0},               // Qwen2-7B: 7,615,616,512
      {"Qwen1.5-MoE-A2.7B", 14315784192.0},     // Qwen1.5-MoE-A2.7B: 14,315,784,192
      {"Qwen3-8B", 8190735360.0},               // Qwen3-8B: 8,190,735,360
      {"Qwen3-30B-A3B", 30532122624.0},         // Qwen3-30B-A3B: 30,532,122,624
      {"gemma-2-9b", 9241705984.0},             // Gemma 2 9B: 9,241,705,984
      {"gemma-3-1b-pt", 999885952.0},           // Gemma 3 1B: 999,885,952
      {"Phi-3-mini-4k-instruct", 3821079552.0}, // Phi-3-mini: 3,821,079,552
      {"DeepSeek-V3", 671026419200.0},          // DeepSeek-V3 main model: 671.0B (report: 671B)
      {"gpt-oss-120b", 116829156672.0},         // gpt-oss-120b: 116.83B (model card)
  };
  for (const Case& c : cases) {
    ModelSpec m = fixture(c.dir);
    INFO(c.dir << ": " << m.total_params() << " vs published " << c.published);
    CHECK(std::abs(m.total_params() - c.published) / c.published < 0.005);
  }
}

TEST_CASE("mixtral_8x7b_counts_8_experts_in_total_and_2_per_token", "[models][moe]")
{
  ModelSpec m = model_preset("mixtral-8x7b");
  // By hand: attention 4096*4096*2 + 2*4096*1024 = 41,943,040; one expert 3*4096*14336
  // = 176,160,768; router 4096*8; two RMSNorms 2*4096; embedding and head 2*32000*4096.
  const double attn = 41943040, expert = 176160768, router = 32768, norms = 8192, tables = 262144000, final = 4096;
  CHECK(m.total_params() == 32 * (attn + 8 * expert + router + norms) + tables + final);  // 46,702,792,704
  CHECK(m.active_params() == 32 * (attn + 2 * expert + router + norms) + tables + final); // 12,879,925,248
  // Published (Jiang et al. 2024): 46.7B total, 12.9B active per token.
  CHECK(std::abs(m.total_params() - 46.7e9) / 46.7e9 < 0.005);
  CHECK(std::abs(m.active_params() - 12.9e9) / 12.9e9 < 0.005);
}

TEST_CASE("deepseek_v3_counts_mla_shared_and_routed_experts_as_its_report", "[models][moe][mla]")
{
  ModelSpec m = model_preset("deepseek-v3");
  // MLA by hand (h 7168, 128 heads): W^DQ 7168*1536, its norm 1536, W^UQ 1536*128*192,
  // W^DKV+W^KR 7168*(512+64), its norm 512, W^UK+W^UV 512*128*(128+128), W^O 16384*7168.
  const double attn =
      7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 + 512.0 * 128 * 256 + 16384.0 * 7168;
  CHECK(attn == 187107328.0);
  CHECK(m.attention_params() == attn);
  const double dense_mlp = 3.0 * 7168 * 18432, expert = 3.0 * 7168 * 2048, router = 256.0 * 7168 + 256;
  const double norms = 2 * 7168.0, tables = 2 * 129280.0 * 7168, final = 7168;
  const double dense_layer = attn + dense_mlp + norms;
  CHECK(m.total_params() == 3 * dense_layer + 58 * (attn + 257 * expert + router + norms) + tables + final);
  CHECK(m.active_params() == 3 * dense_layer + 58 * (attn + 9 * expert + router + norms) + tables + final);
  // Published: 671B total (within 0.5 %), 37B activated. The report gives the active
  // count to two digits; this count of every parameter a token touches, embedding and
  // head included, is 37.55B, 1.5 % above the rounded figure.
  CHECK(std::abs(m.total_params() - 671e9) / 671e9 < 0.005);
  CHECK(m.active_params() == Approx(37.55e9).epsilon(0.001));
  CHECK(std::abs(m.active_params() - 37e9) / 37e9 < 0.016);
  // Node-limited routing (report §2.1.2; config n_group 8, topk_group 4), preset and
  // config alike.
  for (const ModelSpec& x : {m, fixture("DeepSeek-V3")}) {
    CHECK(x.moe.expert_groups == 8);
    CHECK(x.moe.groups_per_token == 4);
  }
}

TEST_CASE("moe_presets_match_their_published_active_counts_to_the_digits_given", "[models][moe]")
{
  // Authors give active counts to two or three digits (3.3B, 22B, 37B, 12.9B, 5.13B);
  // the count agrees when it rounds or truncates to the published figure. gpt-oss's
  // model card counts the unembedding but not the embedding table.
  struct Case {
    const char* id;
    double published, unit;
  };
  const Case cases[] = {{"mixtral-8x7b", 12.9e9, 0.1e9}, {"mixtral-8x22b", 39e9, 1e9},
                        {"deepseek-v3", 37e9, 1e9},      {"qwen3-30b-a3b", 3.3e9, 0.1e9},
                        {"qwen3-235b-a22b", 22e9, 1e9},  {"gpt-oss-120b", 5.13e9, 0.01e9}};
  for (const Case& c : cases) {
    ModelSpec m   = model_preset(c.id);
    double active = m.active_params() - (m.published_active_without_embedding ? m.embedding_params() : 0.0);
    INFO(c.id << ": active " << active << " vs " << c.published << " (" << m.published_source << ")");
    CHECK(m.published_active == c.published);
    bool rounds    = std::abs(active - c.published) <= c.unit / 2;
    bool truncates = active >= c.published && active < c.published + c.unit;
    CHECK((rounds || truncates));
  }
}

TEST_CASE("mla_stores_the_latent_and_the_rotary_key_per_token_and_layer", "[models][mla]")
{
  ModelSpec m = model_preset("deepseek-v3");
  // DeepSeek-V2 §2.1.2: (d_c + d_h^R) = 512 + 64 elements per token and layer, against
  // 2 n_h d_h = 2 * 128 * 128 = 32,768 for multi-head attention of the same heads.
  CHECK(m.kv_elements_per_token() == 576.0);
  ModelSpec mha         = m;
  mha.mla               = MlaSpec{};
  mha.head_dim_override = 128;
  CHECK(mha.kv_elements_per_token() == 32768.0);
}

TEST_CASE("sliding_window_layers_follow_the_config_layer_pattern", "[models][hf]")
{
  ModelSpec oss = fixture("gpt-oss-120b");
  CHECK(oss.sliding_window == 128);
  CHECK(oss.windowed_layer(0));
  CHECK_FALSE(oss.windowed_layer(1)); // layer_types alternate sliding, full
  ModelSpec g3 = fixture("gemma-3-1b-pt");
  CHECK(g3.windowed_layer(4));
  CHECK_FALSE(g3.windowed_layer(5)); // every 6th layer global
  ModelSpec mistral = fixture("Mistral-7B-v0.1");
  CHECK(mistral.windowed_layer(31)); // v0.1: every layer windowed at 4,096
  CHECK(fixture("Mixtral-8x7B-v0.1").sliding_window == 0);
}

TEST_CASE("an_hf_config_missing_a_moe_key_names_it", "[models][hf]")
{
  std::string path = temp_path("broken-moe-config.json");
  write_file(path, R"({"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "num_experts": 8})");
  CHECK_THROWS_WITH(read_hf_config(path), Catch::Contains("missing key 'num_experts_per_tok'"));
}

// inference.engine: hf, Hugging Face transformers' generate() in eager PyTorch, against
// hand counts from transformers' source (modeling_llama.py, cache_utils.py DynamicCache,
// generation/utils.py) on Llama-3-8B (h 4096, 32 heads, 8 KV heads of 128, FFN 14336).
#include "analysis/Hdf5Table.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/modelcode/HfModel.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <H5Cpp.h>

#include <map>

using namespace memwall::test;

namespace {

std::string llama_spec(const std::string& engine, int batch, int prompt, int output)
{
  return "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: llama-3-8b}\n"
         "inference: {engine: " +
         engine + ", weight_dtype: bf16, batch: " + std::to_string(batch) + ", prompt_len: " + std::to_string(prompt) +
         ", output_len: " + std::to_string(output) + "}\n";
}

struct OpRow {
  std::string name, kind;
  double bytes = 0, start = 0, end = 0;
};

// The ops of a run of `yaml`, in the order the file lists them (issue order).
std::vector<OpRow> run_ops(const std::string& name, const std::string& yaml)
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, yaml);
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  H5::H5File f(h5, H5F_ACC_RDONLY);
  H5::Group g                    = f.openGroup("/ops");
  std::vector<std::string> names = memwall::read_texts(g, "name"), kinds = memwall::read_texts(g, "kind");
  std::vector<double> bytes = memwall::read_numbers(g, "bytes"), start = memwall::read_numbers(g, "start_s"),
                      end = memwall::read_numbers(g, "end_s");
  std::vector<OpRow> out;
  for (size_t i = 0; i < names.size(); ++i)
    out.push_back({names[i], kinds[i], bytes[i], start[i], end[i]});
  return out;
}

} // namespace

TEST_CASE("an_hf_decoder_layer_launches_transformers_forward_kernels_one_by_one", "[inference][hf]")
{
  // LlamaDecoderLayer in bf16 (no autocast): input_layernorm (LlamaRMSNorm: to(float32),
  // pow, mean, + eps, rsqrt, x * rsqrt, to(bf16), weight * x: 8), q, k and v projections
  // (3 GEMMs), rotary on q and on k (x * cos, neg, cat, x * sin, add: 5 each), the
  // DynamicCache's torch.cat of K and of V (2), SDPA (1), o_proj (1), the residual add
  // (1), post_attention_layernorm (8), gate, SiLU, up, act * up, down (3 GEMMs, 2),
  // the residual add (1): 40 kernels, 7 of them GEMMs and 1 attention. vLLM fuses the
  // layer into qkv, attention and one proj + MLP launch: 3.
  auto count = [](const std::string& engine) {
    std::map<std::string, int> kinds;
    int total = 0;
    for (const OpRow& o : run_ops("hf_layer_" + engine, llama_spec(engine, 1, 128, 2)))
      if (o.name.rfind("L7.", 0) == 0 && o.kind == "kernel")
        ++total;
    return total;
  };
  CHECK(count("hf") == 2 * 40); // the prefill and one decode
  CHECK(count("vllm") == 2 * 3);
}

TEST_CASE("hf_generate_copies_the_whole_dynamic_cache_with_torch_cat_every_step", "[inference][hf]")
{
  // DynamicCache.update: keys = torch.cat([keys, new]) reads the cached and the new
  // tokens and writes them all: 2 x (context + new) x 8 KV heads x 128 x 2 B per K (and
  // per V) and layer. Prefill of 512 tokens onto an empty cache: 2,097,152 B; the first
  // decode (512 cached + 1): 2,101,248 B; the second: 2,105,344 B.
  std::vector<double> cat;
  for (const OpRow& o : run_ops("hf_cat", llama_spec("hf", 1, 512, 3)))
    if (o.name == "L0.attn.cache_cat_k")
      cat.push_back(o.bytes);
  REQUIRE(cat.size() == 3);
  CHECK(cat[0] == 2.0 * 512 * 1024 * 2);
  CHECK(cat[1] == 2.0 * 513 * 1024 * 2);
  CHECK(cat[2] == 2.0 * 514 * 1024 * 2);
}

TEST_CASE("hf_generate_has_no_kv_budget_and_runs_out_of_memory_where_vllm_batches_what_fits", "[inference][hf]")
{
  // 128 sequences of 4,544 + 64 tokens hold 128 x 4,608 x 131,072 B = 77.3 GB of KV
  // (32 layers x 2 x 8 x 128 x 2 B a token) beside 16.1 GB of bf16 weights: more than the
  // H100's 79.18 GiB. generate() takes the whole batch and grows its DynamicCache until an
  // allocation fails; vLLM sizes its KV pool first and admits the sequences that fit in it.
  nlohmann::json hf   = run_json("hf_oom", llama_spec("hf", 128, 4544, 64));
  nlohmann::json vllm = run_json("vllm_admits", llama_spec("vllm", 128, 4544, 64));
  CHECK(hf["fits"] == false);
  CHECK(vllm["fits"] == true);
  CHECK(vllm["requests_completed"] == 128);
  CHECK(vllm["max_running_seqs"].get<double>() < 128);
  // 16 sequences (9.7 GB of KV) fit both.
  CHECK(run_json("hf_fits", llama_spec("hf", 16, 4544, 64))["fits"] == true);
}

TEST_CASE("an_hf_prefill_moves_more_bytes_than_vllms_fused_one_and_takes_longer", "[inference][hf]")
{
  // The same 8 x 1,024-token prefill: eager's norms go through fp32 copies, rotary,
  // SiLU and the residual adds each read and write the stream on their own; vLLM fuses
  // them into its GEMMs. Its first token comes later.
  nlohmann::json hf   = run_json("hf_prefill", llama_spec("hf", 8, 1024, 1));
  nlohmann::json vllm = run_json("vllm_prefill", llama_spec("vllm", 8, 1024, 1));
  CHECK(hf["ttft_s"]["mean"].get<double>() > vllm["ttft_s"]["mean"].get<double>());
}

TEST_CASE("hf_engine_refuses_what_generate_does_not_do_with_one_line", "[inference][hf][errors]")
{
  using Catch::Matchers::Contains;
  auto spec = [](const std::string& model, const std::string& extra) {
    std::string gpus = extra.find("tp: 2") != std::string::npos ? "2" : "1";
    return "hardware: {node: dgx-h100, gpus_per_node: " + gpus + "}\nmodel: {preset: " + model +
           "}\ninference: {engine: hf, batch: 2, prompt_len: 64, output_len: 4" + extra + "}\n";
  };
  CHECK_THAT(refused("hf_gpt3", spec("gpt3-175b", "")), Contains("inference.engine") && Contains("Llama-family"));
  CHECK_THAT(refused("hf_tp", spec("llama-3-8b", ", tp: 2")), Contains("inference.tp") && Contains("one GPU"));
  CHECK_THAT(refused("hf_cont", spec("llama-3-8b", ", scheduler: continuous")),
             Contains("inference.scheduler") && Contains("static"));
  CHECK_THAT(refused("hf_util", spec("llama-3-8b", ", gpu_memory_utilization: 0.8")),
             Contains("inference.gpu_memory_utilization") && Contains("no KV budget"));
  CHECK_THAT(refused("hf_off", spec("llama-3-8b", ", offload: {weights: nvme}")), Contains("inference.offload"));
  CHECK_THAT(refused("hf_int4", spec("llama-3-8b", ", weight_dtype: int4")), Contains("inference.weight_dtype"));
  CHECK_THAT(refused("hf_block", spec("llama-3-8b", ", block_size: 16")), Contains("inference.block_size"));
  CHECK_THAT(refused("hf_name", "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: llama-3-8b}\n"
                                "inference: {engine: tgi, batch: 2, prompt_len: 64, output_len: 4}\n"),
             Contains("inference.engine") && Contains("hf") && Contains("sglang") && Contains("vllm"));
}

TEST_CASE("an_hf_moe_decode_reads_only_the_experts_its_tokens_hit_in_one_bf16_grouped_gemm", "[inference][hf]")
{
  // bf16 weights take CUTLASS's grouped GEMM (no fp32 fallback, no host sync). One
  // token's decode of Mixtral (8 experts, top 2): S = 2 pairs hit 8 (1 - (7/8)^2) = 1.875,
  // so 2 experts, whose gate_up weights (2 x 4096 x 2 x 14336 bf16) it reads with the
  // pairs' rows in and out.
  memwall::ModelSpec m = memwall::read_hf_config(source_path("tests/data/hf_configs/Mixtral-8x7B-v0.1/config.json"));
  memwall::hf::Precision p;
  p.param = p.compute = 2;
  const double h = 4096, F = 14336, S = 2;
  int grouped = 0;
  for (const memwall::KernelPlan& k : memwall::hf::model_layer(m, {1, 1}, p, 0).kernels) {
    CHECK_FALSE(k.host_sync_forward);
    if (k.name == "moe.experts.gate_up") {
      ++grouped;
      CHECK(k.dtype == memwall::Dtype::bf16);
      CHECK(k.fwd_bytes == Approx((2 * h * 2 * F + S * (h + 2 * F)) * 2).epsilon(1e-12));
    }
  }
  CHECK(grouped == 1);
}

TEST_CASE("gemma2s_generate_softcaps_its_kept_logits_each_decode_step", "[inference][hf]")
{
  // Gemma2ForCausalLM divides the kept logits by final_logit_softcapping, takes tanh and
  // multiplies back: three kernels over b x V a step that the same model without the cap
  // does not launch.
  const std::string config = read_file(source_path("tests/data/hf_configs/gemma-2-9b/config.json"));
  std::string uncapped     = config;
  uncapped.replace(uncapped.find("\"final_logit_softcapping\": 30.0"), 31, "\"final_logit_softcapping\": null");
  const std::string path = temp_path("gemma2_uncapped.json");
  write_file(path, uncapped);
  auto tpot = [](const std::string& name, const std::string& cfg) {
    return run_json(name,
                    "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {hf_config: " + cfg +
                        "}\ninference: {engine: hf, batch: 1, prompt_len: 64, output_len: 16}\n")["tpot_s"]["mean"]
        .get<double>();
  };
  CHECK(tpot("gemma2_capped", source_path("tests/data/hf_configs/gemma-2-9b/config.json")) >
        tpot("gemma2_uncapped", path));
}

TEST_CASE("hf_generate_plans_each_kind_of_layer_its_own_way", "[inference][hf]")
{
  // DeepSeek-V3's first_k_dense_replace layers run DeepseekV3MLP, the rest the routed
  // experts: the 2-layer probe's L0 launches gate, up and down, its L1 the experts' grouped
  // GEMMs (bf16: one CUTLASS kernel a pass).
  int dense = 0, experts = 0, dense_in_moe_layer = 0;
  for (const OpRow& o :
       run_ops("hf_deepseek_kinds",
               "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {hf_config: " +
                   source_path("tests/data/hf_families/deepseek-v3-2l-16e/config.json") +
                   "}\ninference: {engine: hf, weight_dtype: bf16, batch: 1, prompt_len: 64, output_len: 2}\n")) {
    dense += o.name == "L0.mlp.gate" ? 1 : 0;
    experts += o.name == "L1.moe.experts.gate_up" ? 1 : 0;
    dense_in_moe_layer += o.name == "L1.mlp.gate" ? 1 : 0;
  }
  CHECK(dense == 2); // the prefill and the one decode
  CHECK(experts == 2);
  CHECK(dense_in_moe_layer == 0);
  // gpt-oss's sliding layers keep the last window - 1 = 127 tokens
  // (DynamicSlidingWindowLayer): decoding one token after a 2,048-token prompt, layer 0's
  // scores GEMM reads q (64 heads of 64) and 128 keys repeated for each head, layer 1's all
  // 2,049: (H (d + K) + H K d) x 2 B.
  std::vector<double> sliding, full;
  for (const OpRow& o :
       run_ops("hf_gpt_oss_window", "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {hf_config: " +
                                        source_path("tests/data/hf_families/gpt-oss-20b-2l/config.json") +
                                        "}\ninference: {engine: hf, batch: 1, prompt_len: 2048, output_len: 2}\n")) {
    if (o.name == "L0.attn.eager.scores")
      sliding.push_back(o.bytes);
    if (o.name == "L1.attn.eager.scores")
      full.push_back(o.bytes);
  }
  REQUIRE(sliding.size() == 2);
  REQUIRE(full.size() == 2);
  const double H = 64, d = 64;
  auto scores = [&](double K) { return (H * (d + K) + H * K * d) * 2; };
  CHECK(sliding[1] == Approx(scores(128)).epsilon(1e-12));
  CHECK(full[1] == Approx(scores(2049)).epsilon(1e-12));
}

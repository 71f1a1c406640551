// SGLang as a serving engine: its token pool sized as its start-up sizes it, against what
// SGLang logged (tests/data/serving/sglang-logs.md), its defaults and its refusals.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

RunResult serve(const std::string& yaml) { return simulate(parse_spec(yaml, "test.yaml", ""), true); }

const std::string llama31_8b_h100 = "hardware: {node: dgx-h100, gpus_per_node: 1}\n"
                                    "model: {preset: llama-3-8b, max_seq_len: 131072}\n";

} // namespace

TEST_CASE("sglang_gives_llama_3_1_8b_on_an_h100_the_pool_pull_request_4760_logged", "[inference][sglang][kv]")
{
  // sgl-project/sglang PR 4760: 442,750 tokens. Hand count: mem_fraction_static 0.88 (tp 1)
  // x (79.18 GiB - the 0.56 GiB context) = 69.19 GiB, less 14.96 GiB of weights and the
  // 0.03 GiB rotary table = 54.20 GiB at 131,072 B a token: 443,983 (+0.3 %).
  RunResult r = serve(llama31_8b_h100 + "inference: {engine: sglang, engine_release: '0.4.4', weight_dtype: bf16, "
                                        "max_model_len: 131072, batch: 1, prompt_len: 16, output_len: 4}\n");
  CHECK(r.serving.kv_capacity_tokens == Approx(442750).epsilon(0.03));
  CHECK(r.serving.kv_accounting.find("mem_fraction_static 0.880") != std::string::npos);
}

TEST_CASE("sglang_gives_qwq_32b_over_four_l4s_the_pool_its_log_shows", "[inference][sglang][kv]")
{
  // 46,611 tokens logged (0.4.3.post4, mem_fraction_static 0.85, tp 4): 0.85 x (21.95 GiB
  // less the context and NCCL's buffers, 21.38) - 15.27 GiB of weights = 2.91 GiB at 65,536
  // B a token: 47,695 (+2.3 %; the log's free memory after the init was 21.63 GiB and its
  // weights 15.54).
  RunResult r =
      serve("hardware:\n  node: {name: 4x L4, gpu: l4, gpus: 4, fabric: pcie, sockets: 1, "
            "cpu_flops_per_socket: 1 TFLOP/s, dram_bytes: 256 GB, dram_bw_per_socket: 100 GB/s}\n"
            "model: {preset: llama-3-8b, layers: 64, hidden: 5120, heads: 40, kv_heads: 8, ffn_hidden: 27648, "
            "vocab: 152064, max_seq_len: 40960}\n"
            "inference: {engine: sglang, engine_release: '0.4.3.post4', mem_fraction_static: 0.85, tp: 4, "
            "weight_dtype: bf16, max_model_len: 40960, batch: 1, prompt_len: 16, output_len: 4}\n");
  CHECK(r.serving.kv_capacity_tokens == Approx(46611).epsilon(0.03));
}

TEST_CASE("sglang_and_vllm_grant_different_kv_on_the_same_gpu", "[inference][sglang][kv]")
{
  // The same model and H100: SGLang 0.5.6 keeps back a reserve (512 + 1.5 x 8,192 + 2 x 256
  // + 1/8 x 1,024 = 13,440 MiB, at least 10 GiB on a card over 60 GiB: mem_fraction_static
  // round(1 - 13,440 / 81,079, 3) = 0.834) and runs no profile; vLLM 0.11 takes 0.9 of the
  // total less the profile's peak. Both summaries name the engine and its release.
  RunResult sg = serve(llama31_8b_h100 + "inference: {engine: sglang, weight_dtype: bf16, max_model_len: 8192, "
                                         "batch: 1, prompt_len: 16, output_len: 4}\n");
  RunResult vl = serve(llama31_8b_h100 + "inference: {weight_dtype: bf16, max_model_len: 8192, batch: 1, "
                                         "prompt_len: 16, output_len: 4}\n");
  CHECK(sg.serving.kv_accounting.find("SGLang 0.5.6: mem_fraction_static 0.834") == 0);
  CHECK(vl.serving.kv_accounting.find("vLLM 0.11.0") == 0);
  CHECK(sg.serving.kv_capacity_tokens != vl.serving.kv_capacity_tokens);
  // SGLang's pool is a page of one token.
  CHECK(sg.serving.kv_capacity_tokens % 16 != 0);
}

TEST_CASE("sglang_with_weights_over_its_share_says_not_enough_memory", "[inference][sglang][kv]")
{
  RunResult r = serve(llama31_8b_h100 + "inference: {engine: sglang, mem_fraction_static: 0.15, weight_dtype: bf16, "
                                        "max_model_len: 8192, batch: 1, prompt_len: 16, output_len: 4}\n");
  CHECK(r.serving.kv_no_room);
  CHECK(r.serving.kv_refusal.find("Not enough memory. Please try to increase --mem-fraction-static. Current value: "
                                  "self.server_args.mem_fraction_static=0.15") == 0);
}

TEST_CASE("sglangs_keys_are_its_own_and_vllms_its_own", "[inference][sglang][errors]")
{
  const std::string base = "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: llama-3-8b}\ninference: {";
  CHECK_THAT(refused("sg_util", base + "engine: sglang, gpu_memory_utilization: 0.8, batch: 1}\n"),
             Catch::Contains("inference.gpu_memory_utilization") && Catch::Contains("mem_fraction_static"));
  CHECK_THAT(refused("vl_frac", base + "mem_fraction_static: 0.8, batch: 1}\n"),
             Catch::Contains("inference.mem_fraction_static: read by inference engine sglang"));
  CHECK_THAT(refused("sg_rel", base + "engine: sglang, engine_release: '0.11.0', batch: 1}\n"),
             Catch::Contains("0.11.0 is not modelled") && Catch::Contains("SGLang 0.4.0 to 0.5.6"));
}

TEST_CASE("an_sglang_release_candidate_has_its_releases_rules_and_rc0_is_a_tag", "[inference][sglang][kv]")
{
  // SGLang tags rc0 (v0.5.0rc0, v0.5.3rc0: pull request 10468). An rc is cut from its
  // release's branch: 0.5.6rc1 on an RTX 3090 keeps 0.5.6's CUDA-graph batch (24, where
  // 0.5.5 had 16) and so its mem_fraction_static.
  auto on_3090 = [](const std::string& release) {
    return serve("hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b}\n"
                 "inference: {engine: sglang, engine_release: '" +
                 release + "', weight_dtype: bf16, max_model_len: 4096, batch: 1, prompt_len: 16, output_len: 4}\n")
        .serving.kv_accounting;
  };
  auto fraction = [](const std::string& how) { return how.substr(how.find("mem_fraction_static"), 25); };
  CHECK(on_3090("0.5.0rc0").find("SGLang 0.5.0rc0") != std::string::npos);
  CHECK(fraction(on_3090("0.5.6rc1")) == fraction(on_3090("0.5.6")));
  CHECK(fraction(on_3090("0.5.5")) != fraction(on_3090("0.5.6")));
}

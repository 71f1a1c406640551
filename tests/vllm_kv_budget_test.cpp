// vLLM's KV budget as each release's start-up measured it, against what vLLM logged on
// real GPUs (../shared/reference/serving/vllm-kv-logs.md, copied to
// tests/data/serving/vllm-kv-logs.md): the "# GPU blocks" of pull request 2031 before and
// after it (0.2.4 and 0.2.5, A100-SXM4-80GB), and issue 10517's RTX 3090 (0.6.4).
#include "analysis/StepReport.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

struct Startup {
  int64_t blocks = 0; // of 16 tokens
  std::string refusal;
  std::string accounting;
};

Startup start(const std::string& yaml)
{
  RunResult r = simulate(parse_spec(yaml, "test.yaml", ""), true);
  return {r.serving.kv_capacity_tokens / 16, r.serving.kv_refusal, r.serving.kv_accounting};
}

std::string a100(const std::string& model, int tp, const std::string& release)
{
  return "hardware: {node: dgx-a100, gpus_per_node: " + std::to_string(tp) + "}\nmodel: {preset: " + model +
         "}\ninference: {engine_release: '" + release + "', tp: " + std::to_string(tp) +
         ", max_model_len: 4096, batch: 1, prompt_len: 16, output_len: 4}\n";
}

std::string rtx3090(int64_t max_model_len, const std::string& extra = "")
{
  return "hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b, max_seq_len: 131072}\n"
         "inference: {engine_release: '0.6.4', weight_dtype: bf16, max_model_len: " +
         std::to_string(max_model_len) + ", batch: 1, prompt_len: 16, output_len: 4" + extra + "}\n";
}

} // namespace

TEST_CASE("vllm_0_2_4_counts_torch_alone_and_gets_the_blocks_pull_request_2031_logged_before_it",
          "[inference][vllm][kv]")
{
  // Pull request 2031 (vLLM, 2023-12): "# GPU blocks: 7449" for Llama-2-7B and 31615 for
  // Llama-2-70B over 4 GPUs, fp16, max_model_len 4,096, on A100-SXM4-80GB, before it.
  // Hand count of 0.2.4 (Worker.profile_num_available_blocks): 0.9 x 79.26 GiB - weights
  // (12.55 GiB) - the profile's peak, its sampler's argsort over 256 x 32,000 fp16 logits
  // (58 B an element: 0.45 GiB, beside the 4,096-token stream) = 58.29 GiB = 7,461 blocks
  // of 8 MiB. Within 3 % of each log.
  Startup small = start(a100("llama-2-7b", 1, "0.2.4"));
  CHECK(small.blocks == Approx(7449).epsilon(0.03));
  CHECK(small.accounting.find("outside torch 0.00 GiB") != std::string::npos);
  Startup large = start(a100("llama-2-70b", 4, "0.2.4"));
  CHECK(large.blocks == Approx(31615).epsilon(0.03));
}

TEST_CASE("vllm_0_2_5_counts_what_the_gpu_holds_outside_torch_and_gives_fewer_blocks", "[inference][vllm][kv]")
{
  // After pull request 2031 (0.2.5): taken = total - free after the profile run. One GPU:
  // 7351 blocks logged, the CUDA context (0.47 GiB, 60 blocks) the difference memwall
  // counts. Over 4 GPUs, 20865 logged: NCCL's buffers and every all-reduced activation
  // torch kept reserved (pull request 2151: 161 x 64 MiB) fall 8,900 blocks short of the
  // logged 10,750; what else the GPU held there (the caching allocator's segments split
  // around the pending blocks) is not modelled, so memwall stays 8 % above the log.
  Startup small = start(a100("llama-2-7b", 1, "0.2.5"));
  CHECK(small.blocks == Approx(7351).epsilon(0.03));
  CHECK(small.blocks < start(a100("llama-2-7b", 1, "0.2.4")).blocks);
  Startup large = start(a100("llama-2-70b", 4, "0.2.5"));
  CHECK(large.blocks == Approx(20865).epsilon(0.10));
  CHECK(large.blocks < 31615 - 8000);
}

TEST_CASE("vllm_0_6_4_on_an_rtx_3090_gets_issue_10517s_1952_blocks_at_20000_tokens", "[inference][vllm][kv]")
{
  // Issue 10517: Llama-3.1-8B bf16, max_model_len 20,000, chunked prefill off (<= 32K):
  // peak_torch_memory 17.06 GiB (weights 14.99 GiB and a profile of 20,000 tokens: the
  // MLP's gate_up and product beside three streams, 110,616 B a token = 2.06 GiB),
  // non_torch 0.35 GiB, kv_cache_size 3.81 GiB: "# GPU blocks: 1952".
  Startup s = start(rtx3090(20000));
  CHECK(s.blocks == Approx(1952).epsilon(0.03));
  CHECK(s.refusal.empty());
}

TEST_CASE("vllm_0_6_4_refuses_29000_tokens_on_an_rtx_3090_with_the_numbers_it_logged", "[inference][vllm][kv]")
{
  // Issue 10517: at 29,000 tokens the profile peak grows by 9,000 x 110,616 B, leaving
  // 1,478 blocks: "The model's max seq len (29000) is larger than the maximum number of
  // tokens that can be stored in KV cache (23648)."
  Startup s = start(rtx3090(29000));
  CHECK(s.blocks == Approx(1478).epsilon(0.03));
  CHECK(s.refusal.find("The model's max seq len (29000) is larger than the maximum number of tokens that can be "
                       "stored in KV cache (") == 0);
  // Above 32K chunked prefill is on (512 tokens a step): the profile shrinks and 35,000
  // starts, as the thread says (with few sequences, as its log's 15.05 GiB peak shows).
  CHECK(start(rtx3090(35000, ", max_num_seqs: 4")).refusal.empty());
}

TEST_CASE("a_vllm_refusal_is_a_run_that_did_not_fit_with_the_engines_words_and_the_bytes_it_lacks",
          "[inference][vllm][kv]")
{
  nlohmann::json j = run_json("vllm_refusal", rtx3090(29000));
  CHECK(j["fits"] == false);
  REQUIRE(j["did_not_fit"].is_object());
  std::string what = j["did_not_fit"]["what"];
  CHECK(what.find("would not start") != std::string::npos);
  CHECK(what.find("(23648)") != std::string::npos);
  // 29,000 tokens x 128 KiB = 3.54 GiB against the 2.89 GiB budget.
  CHECK(j["did_not_fit"]["overflow_bytes"].get<double>() / (1 << 30) ==
        Approx(29000.0 * 131072 / (1 << 30) - 2.887).margin(0.01));
}

TEST_CASE("vllm_v1_says_the_estimated_maximum_model_length_and_0_8_did_not", "[inference][vllm][kv]")
{
  // check_enough_kv_cache_memory: 131,072 tokens x 128 KiB = 16.00 GiB needed.
  auto spec = [](const std::string& release) {
    return "hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b, max_seq_len: 131072}\n"
           "inference: {engine_release: '" +
           release + "', weight_dtype: bf16, max_model_len: 131072, batch: 1, prompt_len: 16, output_len: 4}\n";
  };
  Startup now = start(spec("0.11.0"));
  CHECK(now.refusal.find("(16.00 GiB KV cache is needed") != std::string::npos);
  CHECK(now.refusal.find("the estimated maximum model length is " + std::to_string(now.blocks * 16) + ".") !=
        std::string::npos);
  Startup old = start(spec("0.8.5"));
  CHECK(old.refusal.find("Based on the available memory, Try") != std::string::npos);
}

TEST_CASE("vllm_with_no_memory_left_says_no_available_memory_for_the_cache_blocks", "[inference][vllm][kv]")
{
  // 0.6 x 23.58 GiB = 14.15 GiB, under the 14.99 GiB of weights.
  Startup s = start(rtx3090(4096, ", gpu_memory_utilization: 0.6"));
  CHECK(s.blocks == 0);
  CHECK(s.refusal == "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                     "initializing the engine.");
}

TEST_CASE("the_release_sets_the_batch_vllm_profiles", "[inference][vllm][kv]")
{
  // 0.2-0.5: max(max_model_len, 2048) tokens (SchedulerConfig); 0.6.4 above 32K: 512; V1
  // on an RTX 3090 as a fixed batch (the LLM class): 8,192 tokens, 256 sequences.
  CHECK(start(rtx3090(20000)).accounting.find("(20,000 tokens, 256 sequences)") != std::string::npos);
  CHECK(start(rtx3090(40000)).accounting.find("(512 tokens, 256 sequences)") != std::string::npos);
  std::string v1 = start("hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b}\n"
                         "inference: {weight_dtype: bf16, max_model_len: 4096, batch: 1, prompt_len: 16, "
                         "output_len: 4}\n")
                       .accounting;
  CHECK(v1.find("vLLM 0.11.0 (V1") == 0);
  CHECK(v1.find("(8,192 tokens, 256 sequences)") != std::string::npos);
}

TEST_CASE("an_engine_release_vllm_never_had_or_does_not_model_is_refused", "[inference][vllm][errors]")
{
  const std::string base = "hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b}\ninference: {batch: 1, ";
  CHECK_THAT(refused("rel_text", base + "engine_release: latest}\n"),
             Catch::Contains("inference.engine_release") && Catch::Contains("such as 0.2.4"));
  CHECK_THAT(refused("rel_new", base + "engine_release: '0.12.0'}\n"),
             Catch::Contains("0.12.0 is not modelled") && Catch::Contains("0.11.2"));
  CHECK_THAT(refused("rel_hf", base + "engine: hf, engine_release: '0.6.4'}\n"),
             Catch::Contains("inference.engine_release"));
}

TEST_CASE("vllm_checks_max_model_len_against_one_attention_data_parallel_groups_blocks", "[inference][vllm][kv]")
{
  // Mixtral-8x7B on 4 H100s, tp 1, ep 4: four attention data-parallel groups, each a worker
  // with its own cache. At gpu_memory_utilization 0.4 each GPU keeps ~1.08 GiB of KV under
  // 0.6.4 at 128 KiB a token (32 layers x 8 KV heads x 128 x 2 x 2 bytes): ~8,900 tokens,
  // under the 32,768 of max_model_len, though the four groups together hold ~35,000 (V1,
  // counting less outside torch, at 0.35: ~0.7 GiB). vLLM checks one worker's blocks
  // (0.6.4's raise_if_cache_size_invalid, V1's estimate_max_model_len over one worker's
  // available memory), so both refuse, naming one group's tokens.
  auto spec = [](const std::string& release, const std::string& utilization) {
    return "hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {preset: mixtral-8x7b}\n"
           "inference: {engine_release: '" +
           release + "', tp: 1, ep: 4, gpu_memory_utilization: " + utilization +
           ", max_model_len: 32768, batch: 8, prompt_len: 16, output_len: 2}\n";
  };
  Startup v0                 = start(spec("0.6.4", "0.4"));
  const int64_t group_tokens = v0.blocks * 16 / 4;
  CHECK(group_tokens < 32768);
  CHECK(v0.blocks * 16 > 32768);
  CHECK(v0.refusal.find("The model's max seq len (32768) is larger than the maximum number of tokens that can be "
                        "stored in KV cache (" +
                        std::to_string(group_tokens) + ")") != std::string::npos);
  Startup v1 = start(spec("0.11.0", "0.35"));
  CHECK(v1.blocks * 16 > 4 * 4096);
  CHECK(v1.refusal.find("the estimated maximum model length is " + std::to_string(v1.blocks * 16 / 4) + ".") !=
        std::string::npos);
}

TEST_CASE("vllm_v1_says_no_available_memory_only_when_nothing_is_left", "[inference][vllm][kv]")
{
  // V1's check_enough_kv_cache_memory raises "No available memory for the cache blocks"
  // when the available memory is <= 0; a budget above nothing but under one block is a
  // request that does not fit ("To serve at least one request ..."). V0 counted whole
  // blocks (num_gpu_blocks <= 0). The budget is u x total - the rest, so two runs give the
  // total and the rest, and u is set to leave 1 MiB, half a block of 16 x 128 KiB.
  auto spec = [](const std::string& release, double u) {
    char text[64];
    std::snprintf(text, sizeof text, "%.12f", u);
    return "hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b}\ninference: {engine_release: '" + release +
           "', weight_dtype: bf16, max_model_len: 4096, batch: 1, prompt_len: 16, output_len: 4, "
           "gpu_memory_utilization: " +
           text + "}\n";
  };
  auto budget = [&](const std::string& release, double u) {
    return simulate(parse_spec(spec(release, u), "test.yaml", ""), true).serving.kv_budget_bytes;
  };
  for (const std::string release : {"0.11.0", "0.6.4"}) {
    const double total = (budget(release, 0.9) - budget(release, 0.8)) / 0.1;
    const double rest  = 0.9 * total - budget(release, 0.9);
    const double u     = (rest + 1024.0 * 1024) / total;
    RunResult r        = simulate(parse_spec(spec(release, u), "test.yaml", ""), true);
    CHECK(r.serving.kv_budget_bytes == Approx(1024.0 * 1024).epsilon(0.01));
    const bool says_none = r.serving.kv_refusal.find("No available memory") == 0;
    CHECK(says_none == (release == "0.6.4"));
    if (release == "0.11.0")
      CHECK(r.serving.kv_refusal.find("To serve at least one request") == 0);
  }
}

TEST_CASE("a_contiguous_kv_cache_short_of_max_model_len_is_vllms_max_seq_len_refusal", "[inference][vllm][kv]")
{
  // Under a contiguous manager a request reserves max_model_len slots; a budget that holds
  // blocks but not 29,000 tokens (0.6.4 on an RTX 3090 holds ~23,650 at 29,000, as issue
  // 10517 logged) is V0's "max seq len ... larger than" the tokens the KV holds, not "no
  // available memory".
  Startup s = start(rtx3090(29000, ", kv_manager: contiguous"));
  CHECK(s.blocks > 0);
  CHECK(s.refusal.find("The model's max seq len (29000) is larger than") == 0);
}

TEST_CASE("vllm_release_numbers_are_read_as_vllm_tags_them", "[inference][vllm][kv]")
{
  // 0.10.1.1 is a release (a hotfix of 0.10.1); 0.8.0rc1 was cut from 0.8.0's branch and
  // has its rules (V1 by default); 0.11.2 is the last 0.11 release modelled, so 0.11.5 is
  // refused.
  auto spec = [](const std::string& release) {
    return "hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b}\ninference: {engine_release: '" + release +
           "', weight_dtype: bf16, max_model_len: 4096, batch: 1, prompt_len: 16, output_len: 4}\n";
  };
  CHECK(start(spec("0.10.1.1")).accounting.find("vLLM 0.10.1.1 (V1, the 0.9.1-0.10.x rules)") == 0);
  CHECK(start(spec("0.8.0rc1")).accounting.find("vLLM 0.8.0rc1 (V1, the 0.8.x rules)") == 0);
  // ... and prints what its release prints: 0.9.1's estimate of the longest model length.
  const std::string too_long = "hardware: {node: desktop-3090}\nmodel: {preset: llama-3-8b, max_seq_len: 131072}\n"
                               "inference: {engine_release: '0.9.1rc1', weight_dtype: bf16, max_model_len: 131072, "
                               "batch: 1, prompt_len: 16, output_len: 4}\n";
  CHECK(start(too_long).refusal.find("the estimated maximum model length is") != std::string::npos);
  CHECK(start(spec("0.11.2.post1")).accounting.find("vLLM 0.11.2.post1 (V1") == 0);
  CHECK(start(spec("0.11.2")).accounting.find("vLLM 0.11.2 (V1") == 0);
  CHECK_THAT(refused("rel_future_patch", spec("0.11.5")), Catch::Contains("0.11.5 is not modelled"));
}

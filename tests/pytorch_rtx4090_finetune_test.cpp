// The README's fine-tuning answers on one RTX 4090 (24 GB): QLoRA of Llama-3-8B
// (examples/qlora-llama3-8b-1xrtx4090.yaml) and bf16 LoRA of it, checked against PEFT's
// maintainer's measurement (BenjaminBossan/peft-experiments at 6028f89,
// torchtune/llama3-lora-single-device; examples/lora-llama3-8b-1xrtx4090.yaml).
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

namespace {

// How the README quotes a run's pace: "1,219 tokens/s: 22.8 hours for 100 M tokens".
std::string readme_hours(const nlohmann::json& run)
{
  const double tps = run["tokens_per_s"].get<double>();
  char quoted[96];
  std::snprintf(quoted, sizeof quoted, "%d,%03d tokens/s: %.1f hours for 100 M tokens", static_cast<int>(tps) / 1000,
                static_cast<int>(std::lround(tps)) % 1000, 1e8 / tps / 3600);
  return quoted;
}

} // namespace

TEST_CASE("the_readmes_qlora_question_on_an_rtx_4090_is_what_memwall_answers", "[stack][pytorch][lora]")
{
  // README: examples/qlora-llama3-8b-1xrtx4090.yaml fits at micro-batch 1, not at 2, and
  // quotes its tokens per second and the hours for 100 M tokens.
  const std::string spec =
      memwall::test::read_file(memwall::test::source_path("examples/qlora-llama3-8b-1xrtx4090.yaml"));
  nlohmann::json one = memwall::test::run_json("readme_qlora_mb1", spec);
  CHECK(one["fits"] == true);
  nlohmann::json two = memwall::test::run_json("readme_qlora_mb2", spec, "--set training.micro_batch=2");
  CHECK(two["fits"] == false);
  CHECK_THAT(memwall::test::read_file(memwall::test::source_path("README.md")), Catch::Contains(readme_hours(one)));
}

TEST_CASE("peft_module_names_adapt_only_the_projections_they_name", "[stack][pytorch][lora]")
{
  // target_modules=["q_proj", "v_proj"], rank 8, on Llama-3-8B (h 4,096, kv 1,024, 32
  // layers): 32 x 8 x ((4,096 + 4,096) + (4,096 + 1,024)) = 3,407,872 trainable
  // parameters, what PEFT's print_trainable_parameters() printed for the measured run
  // (peft-experiments, torchtune/llama3-lora-single-device/train-peft.ipynb). bf16
  // adapters: 2 B gradients, AdamW's two moments 2 B each.
  const double trained = 32 * 8 * ((4096 + 4096) + (4096 + 1024));
  CHECK(trained == 3407872);
  nlohmann::json j = memwall::test::run_json(
      "lora_q_v", memwall::test::read_file(memwall::test::source_path("examples/lora-llama3-8b-1xrtx4090.yaml")));
  const auto& by = j["devices"][0]["max_by_category"];
  CHECK(by["gradients"].get<double>() == Approx(2 * trained).epsilon(1e-9));
  CHECK(by["optimizer"].get<double>() == Approx(4 * trained).epsilon(1e-9));
  // The frozen base (8,030,261,248 parameters in bf16) and the adapters.
  CHECK(by["weights"].get<double>() == Approx(2 * (8030261248.0 + trained)).epsilon(1e-9));
  // The same targets by memwall's groups take k_proj too.
  nlohmann::json qkv = memwall::test::run_json(
      "lora_qkv_group", memwall::test::read_file(memwall::test::source_path("examples/lora-llama3-8b-1xrtx4090.yaml")),
      "--set training.lora.targets=[qkv]");
  CHECK(qkv["devices"][0]["max_by_category"]["gradients"].get<double>() ==
        Approx(2 * (trained + 32 * 8 * (4096 + 1024))).epsilon(1e-9));
}

TEST_CASE("bf16_lora_of_llama_3_8b_peaks_where_peft_measured_it_on_an_rtx_4090", "[stack][pytorch][lora]")
{
  // PEFT's maintainer, BenjaminBossan/peft-experiments (Apache-2.0) at 6028f89,
  // torchtune/llama3-lora-single-device: Llama-3-8B-Instruct in bf16 on one RTX 4090,
  // PEFT 1b16753a with rank-8 bf16 adapters on q_proj and v_proj, transformers 7f552e28
  // (4.44.0.dev0), torch 2.3.1, batch 2 of alpaca-cleaned padded to the longest and cut at
  // 512 tokens, four micro-batches a step, AdamW, no gradient checkpointing, the model left
  // in eval mode (lora_dropout inert). log_peft.txt: torch.cuda.max_memory_allocated
  // 23.446532096 GB in 301 of 3,255 steps, its maximum (a 2 x 512 micro-batch); reserved
  // 24.39 GB. memwall's allocated peak within 2 % of it, and nearer than with PEFT's
  // default fp32 adapters (each adapted projection's own bf16 copy of x kept), its
  // reserved within the card.
  nlohmann::json j = memwall::test::run_json(
      "lora_4090", memwall::test::read_file(memwall::test::source_path("examples/lora-llama3-8b-1xrtx4090.yaml")));
  CHECK(j["fits"] == true);
  const double measured = 23.446532096e9, peak = memwall::test::peak_without_context(j);
  CHECK(peak == Approx(measured).epsilon(0.02));
  nlohmann::json fp32 = memwall::test::run_json(
      "lora_4090_fp32", memwall::test::read_file(memwall::test::source_path("examples/lora-llama3-8b-1xrtx4090.yaml")),
      "--set training.lora.adapter_dtype=fp32");
  CHECK(std::abs(peak - measured) < std::abs(memwall::test::peak_without_context(fp32) - measured));
  const auto& gpu = j["devices"][0];
  CHECK(gpu["allocator"]["peak_reserved_bytes"].get<double>() < gpu["capacity_bytes"].get<double>());
  // The README's answer: two sequences a micro-batch fit, three do not; its tokens per
  // second and the hours for 100 M tokens.
  nlohmann::json three = memwall::test::run_json(
      "lora_4090_mb3", memwall::test::read_file(memwall::test::source_path("examples/lora-llama3-8b-1xrtx4090.yaml")),
      "--set training.micro_batch=3 --set training.global_batch=12");
  CHECK(three["fits"] == false);
  CHECK_THAT(memwall::test::read_file(memwall::test::source_path("README.md")), Catch::Contains(readme_hours(j)));
}

// bitsandbytes' paged AdamW under the `pytorch` stack (the Trainer's optim
// "paged_adamw_32bit" / "paged_adamw_8bit"; calibration/research/peft-qlora-liger.md
// section 4): the states in cudaMallocManaged memory beside PyTorch's caching allocator,
// prefetched to the GPU before each update, evicted to the host by the driver when a
// cudaMalloc needs the room. Checked against the QLoRA paper's claim (Dettmers et al. 2023,
// abstract) that a 65B model is fine-tuned on one 48 GB GPU, with artidoro/qlora's
// finetune_guanaco_65b.sh settings (its bf16 adapters do most of that; the paging shows
// where PEFT's fp32 adapters would not fit).
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

namespace {

// LLaMA-65B (80 layers, h 8,192, 64 heads without GQA, ffn 22,016, vocab 32,000) with
// QLoRA as finetune_guanaco_65b.sh runs it on one RTX A6000: rank 64 on every projection,
// lora_dropout 0.05, at most 16 + 512 tokens, one sequence a micro-batch, 16 a step,
// gradient checkpointing (transformers of 2023: reentrant), under `optimizer` with the
// adapters in `adapters` (the script casts them to bf16).
std::string guanaco_65b(const std::string& optimizer, const std::string& adapters)
{
  return "hardware:\n  node: {name: RTX A6000 workstation, gpu: rtx-a6000, gpus: 1, fabric: pcie, sockets: 1,\n"
         "         cpu_flops_per_socket: 2 TFLOP/s, dram_bytes: 256 GB, dram_bw_per_socket: 200 GB/s}\n"
         "model: {preset: llama-2-70b, kv_heads: 64, ffn_hidden: 22016}\n"
         "training: {stack: pytorch, seq_len: 528, global_batch: 16, micro_batch: 1, recompute: full,\n"
         "  optimizer: " +
         optimizer +
         ", pytorch: {use_reentrant: true},\n  lora: {rank: 64, base: nf4, dropout: 0.05, adapter_dtype: " + adapters +
         ", targets: [qkv, proj, mlp.up, mlp.down]}}\n";
}

// Adapter parameters: 80 layers x r 64 x the sum of (in + out) over q, k, v, o (8,192 +
// 8,192 each), gate and up (8,192 + 22,016 each) and down (22,016 + 8,192).
constexpr double adapters = 80.0 * 64 * (4 * 16384 + 3 * 30208);

} // namespace

TEST_CASE("paged_adamw_32bit_keeps_fp32_states_in_managed_memory_beside_the_caching_allocator",
          "[stack][pytorch][lora][paging]")
{
  // The script casts the adapters to bf16; bitsandbytes' 32-bit states stay fp32
  // (Optimizer2State.init_state): 8 B a parameter, 799.5 M parameters, 6.40 GB, in
  // managed memory. PyTorch's caching allocator still serves every other tensor.
  CHECK(adapters == 799539200.0);
  nlohmann::json j = memwall::test::run_json("paged_guanaco_65b", guanaco_65b("paged_adamw_32bit", "bf16"));
  const auto& gpu  = j["devices"][0];
  CHECK(gpu["max_by_category"]["optimizer"].get<double>() == Approx(8 * adapters).epsilon(1e-9));
  CHECK(gpu["allocator"]["name"] == "caching");
  // The paper's claim: it fits the 48 GB card, its states never leaving it.
  CHECK(j["fits"] == true);
  CHECK(j["paging"]["migrated_d2h_bytes"].get<double>() == 0);
}

TEST_CASE("a_paged_optimizer_fits_where_its_states_would_not_by_lending_them_to_the_host",
          "[stack][pytorch][lora][paging]")
{
  // With PEFT's default fp32 adapters (their weights and gradients twice the bf16 ones)
  // torch's AdamW runs out of memory on the card, where the paged states make way for the
  // caching allocator's segments: the driver evicts some to the host during forward and
  // backward, and prefetches them back for their update (what PyTorch's cached segments
  // leave room for), the step slower than the unpaged one would be with room enough.
  nlohmann::json unpaged = memwall::test::run_json("unpaged_guanaco_65b_fp32", guanaco_65b("adamw", "fp32"));
  CHECK(unpaged["fits"] == false);
  nlohmann::json paged = memwall::test::run_json("paged_guanaco_65b_fp32", guanaco_65b("paged_adamw_32bit", "fp32"));
  CHECK(paged["fits"] == true);
  const double out = paged["paging"]["migrated_d2h_bytes"].get<double>();
  const double in  = paged["paging"]["migrated_h2d_bytes"].get<double>();
  CHECK(out > 0);
  CHECK(in > 0);
  CHECK(paged["step_time_s"].get<double>() > unpaged["did_not_fit"]["step_time_if_it_fit_s"].get<double>());
}

TEST_CASE("paged_optimizers_are_bitsandbytes_and_refused_elsewhere_naming_the_key", "[stack][limits]")
{
  std::string err = memwall::test::refused(
      "paged_megatron", "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                        "training: {stack: megatron, seq_len: 512, global_batch: 1, optimizer: paged_adamw_8bit}\n");
  CHECK(err.find("training.optimizer") != std::string::npos);
  CHECK(err.find("paged") != std::string::npos);
}

// Inconsistent parallel layouts and memory options: one line naming the key and what is
// allowed, exit code 2, no output file.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

using namespace memwall::test;

namespace {

// GPT-2 medium: 24 layers, 16 heads; one DGX A100 (8 GPUs).
std::string refused_training(const std::string& name, const std::string& training)
{
  std::string yaml =
      "hardware: {node: dgx-a100}\nmodel: {preset: gpt2-medium}\ntraining: {seq_len: 512, " + training + "}\n";
  std::string spec = temp_path(name + ".yaml");
  std::string h5   = temp_path(name + ".h5");
  write_file(spec, yaml);
  CliResult r = run_cli("run " + spec + " -o " + h5);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(name + ".yaml") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(h5));
  return r.err;
}

} // namespace

TEST_CASE("a_tp_that_does_not_divide_the_heads_is_refused", "[errors][layout]")
{
  CHECK_THAT(refused_training("tp_heads", "tp: 3, global_batch: 6"),
             Catch::Contains("training.tp") && Catch::Contains("does not divide the model's 16 attention heads"));
}

TEST_CASE("a_pp_that_does_not_divide_the_layers_is_refused", "[errors][layout]")
{
  // 24 layers: pp 4 alone divides them, pp 4 x 4 virtual stages = 16 chunks does not.
  CHECK_THAT(refused_training("pp_layers", "pp: 4, pipeline_schedule: interleaved, virtual_stages: 4, global_batch: 8"),
             Catch::Contains("training.virtual_stages") && Catch::Contains("does not divide the model's 24 layers"));
}

TEST_CASE("a_pp_larger_than_the_layers_is_refused", "[errors][layout]")
{
  std::string yaml = "hardware: {node: dgx-a100, nodes: 4}\nmodel: {preset: gpt2-medium}\n"
                     "training: {seq_len: 512, pp: 32, global_batch: 32}\n";
  std::string spec = temp_path("pp_32.yaml");
  write_file(spec, yaml);
  CliResult r = run_cli("run " + spec);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("training.pp") && Catch::Contains("does not divide the model's 24 layers"));
}

TEST_CASE("a_layout_whose_product_is_not_the_gpu_count_is_refused", "[errors][layout]")
{
  CHECK_THAT(refused_training("tp_pp_dp", "tp: 2, pp: 2, dp: 4, global_batch: 8"),
             Catch::Contains("tp x pp x dp = 2 x 2 x 4 = 16 but the hardware has 8 GPUs"));
  CHECK_THAT(refused_training("tp_pp_gpus", "tp: 4, pp: 3, global_batch: 8"),
             Catch::Contains("tp x pp = 12 does not divide the 8 GPUs"));
}

TEST_CASE("micro_batches_that_do_not_divide_the_global_batch_are_refused", "[errors][layout]")
{
  CHECK_THAT(refused_training("mb_batch", "tp: 2, global_batch: 10, micro_batch: 2"),
             Catch::Contains("training.global_batch") && Catch::Contains("micro_batch x dp = 8"));
}

TEST_CASE("the_interleaved_schedule_needs_virtual_stages_and_a_multiple_of_pp_micro_batches", "[errors][layout]")
{
  CHECK_THAT(refused_training("interleaved_v1", "pp: 2, pipeline_schedule: interleaved, global_batch: 8"),
             Catch::Contains("needs virtual_stages >= 2"));
  CHECK_THAT(refused_training("interleaved_m",
                              "pp: 4, dp: 2, pipeline_schedule: interleaved, virtual_stages: 2, global_batch: 12"),
             Catch::Contains("multiple of pp = 4"));
  CHECK_THAT(refused_training("virtual_1f1b", "pp: 2, virtual_stages: 2, global_batch: 8"),
             Catch::Contains("needs pipeline_schedule: interleaved"));
}

TEST_CASE("an_unknown_pipeline_schedule_lists_the_allowed_ones", "[errors][layout]")
{
  CHECK_THAT(refused_training("schedule", "pp: 2, pipeline_schedule: zigzag, global_batch: 8"),
             Catch::Contains("gpipe") && Catch::Contains("1f1b") && Catch::Contains("interleaved"));
}

TEST_CASE("sequence_parallelism_without_tensor_parallelism_is_refused", "[errors][layout]")
{
  CHECK_THAT(refused_training("sp_tp1", "sp: true, global_batch: 8"), Catch::Contains("needs tp > 1"));
}

TEST_CASE("zero_stages_beyond_3_and_zero3_with_pipelines_outside_fsdp_are_refused", "[errors][zero]")
{
  CHECK_THAT(refused_training("zero4", "zero: 4, global_batch: 8"), Catch::Contains("zero: must lie in [0, 3]"));
  // Megatron's stack (the default) and DeepSpeed's engine do not shard across stages.
  CHECK_THAT(refused_training("zero3_pp", "zero: 3, pp: 2, global_batch: 8"),
             Catch::Contains("training stack megatron does not shard parameters across pipeline stages"));
  CHECK_THAT(refused_training("zero3_pp_ds", "stack: deepspeed, zero: 3, pp: 2, global_batch: 8"),
             Catch::Contains("training stack deepspeed does not shard"));
}

TEST_CASE("offload_options_that_zero_cannot_honour_are_refused", "[errors][offload]")
{
  CHECK_THAT(
      refused_training("offload_params_zero2", "zero: 2, offload: {optimizer: cpu, params: cpu}, global_batch: 8"),
      Catch::Contains("offload.params needs zero: 3"));
  CHECK_THAT(refused_training("offload_zero0", "offload: {optimizer: cpu}, global_batch: 8"),
             Catch::Contains("needs zero >= 1"));
  CHECK_THAT(refused_training("offload_params_only", "zero: 3, offload: {params: nvme}, global_batch: 8"),
             Catch::Contains("needs offload.optimizer too"));
  CHECK_THAT(refused_training("offload_where", "zero: 2, offload: {optimizer: gpu}, global_batch: 8"),
             Catch::Contains("training.offload.optimizer") && Catch::Contains("none, cpu, nvme"));
}

TEST_CASE("lora_with_zero3_and_unknown_lora_targets_are_refused", "[errors][lora]")
{
  CHECK_THAT(refused_training("lora_zero3", "zero: 3, lora: {rank: 8}, global_batch: 8"),
             Catch::Contains("LoRA with ZeRO-3 is not supported"));
  CHECK_THAT(refused_training("lora_target", "lora: {targets: [qkv, lm_head]}, global_batch: 8"),
             Catch::Contains("'lm_head' is not a projection"));
  CHECK_THAT(refused_training("lora_rank", "lora: {rank: 0}, global_batch: 8"), Catch::Contains("training.lora.rank"));
  // transformers' module names are the pytorch stack's; Megatron fuses q, k and v.
  CHECK_THAT(refused_training("lora_module_megatron", "lora: {targets: [q_proj, v_proj]}, global_batch: 8"),
             Catch::Contains("'q_proj' names a transformers module") && Catch::Contains("qkv, proj, mlp.up, mlp.down"));
  CHECK_THAT(refused_training("lora_dropout_megatron", "lora: {dropout: 0.05}, global_batch: 8"),
             Catch::Contains("dropout: PEFT's lora_dropout"));
  CHECK_THAT(refused_training("lora_dropout_range", "lora: {dropout: 1.5}, global_batch: 8"),
             Catch::Contains("training.lora.dropout"));
  CHECK_THAT(refused_training("lora_adapter_dtype_megatron", "lora: {adapter_dtype: bf16}, global_batch: 8"),
             Catch::Contains("adapter_dtype: PEFT's autocast_adapter_dtype"));
}

TEST_CASE("a_seq_len_past_the_models_context_names_the_key_that_extends_it", "[errors][layout]")
{
  // GPT-2 medium has 1,024 positions; the line says how a longer-context variant is run.
  std::string spec = temp_path("seq_past_context.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2-medium}\n"
                   "training: {seq_len: 2048, global_batch: 8, micro_batch: 1}\n");
  CliResult r = run_cli("run " + spec);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("training.seq_len") &&
                        Catch::Contains("2048 exceeds the model's max_seq_len 1024") &&
                        Catch::Contains("--set model.max_seq_len=2048"));
  // And that key does run it.
  CHECK(run_cli("run " + spec + " --json --set model.max_seq_len=2048").exit_code == 0);
}

// Bad input: one clear line on stderr naming file, key or line and what is allowed,
// exit code 2, no crash and no output file.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

using namespace memwall::test;

namespace {

const std::string good = small_training_spec;

} // namespace

TEST_CASE("the_good_spec_used_below_runs", "[errors]")
{
  std::string spec = temp_path("good.yaml");
  write_file(spec, good);
  CliResult r = run_cli("run " + spec + " --json");
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("malformed_yaml_is_refused_with_its_line", "[errors]")
{
  std::string err = refused("malformed", "hardware:\n  node: [desktop-4070\nmodel: {preset: gpt2}\n");
  CHECK_THAT(err, Catch::Contains("malformed.yaml:") && Catch::Contains("malformed YAML"));
}

TEST_CASE("an_unknown_key_names_file_line_key_and_the_allowed_keys", "[errors]")
{
  std::string yaml = good + "  micro_bach: 2\n"; // line 9
  std::string err  = refused("unknown_key", yaml);
  CHECK_THAT(err, Catch::Contains("unknown_key.yaml:9") && Catch::Contains("training.micro_bach") &&
                      Catch::Contains("unknown key") && Catch::Contains("did you mean micro_batch") &&
                      Catch::Contains("allowed keys:") && Catch::Contains("global_batch"));
}

TEST_CASE("an_unknown_top_level_section_is_refused", "[errors]")
{
  std::string err = refused("unknown_section", good + "trainig:\n  dp: 1\n");
  CHECK_THAT(err, Catch::Contains("trainig: unknown key"));
}

TEST_CASE("a_wrong_type_is_refused_naming_the_key_and_the_expected_type", "[errors]")
{
  std::string yaml = good;
  yaml.replace(yaml.find("seq_len: 256"), 12, "seq_len: long");
  std::string err = refused("wrong_type", yaml);
  CHECK_THAT(err, Catch::Contains("training.seq_len") && Catch::Contains("expected an integer"));
}

TEST_CASE("a_negative_size_is_refused", "[errors]")
{
  std::string yaml = good;
  yaml.replace(yaml.find("micro_batch: 1"), 14, "micro_batch: -4");
  std::string err = refused("negative", yaml);
  CHECK_THAT(err, Catch::Contains("training.micro_batch") && Catch::Contains("must lie in [1, "));
}

TEST_CASE("a_negative_quantity_in_an_inline_gpu_is_refused", "[errors]")
{
  std::string yaml = good;
  yaml.replace(yaml.find("node: desktop-4070"), 18,
               "node: desktop-4070\n  gpu: {preset: rtx-4070, memory_bytes: -12e9}");
  std::string err = refused("negative_memory", yaml);
  CHECK_THAT(err, Catch::Contains("hardware.gpu.memory_bytes") && Catch::Contains("must not be negative"));
}

TEST_CASE("an_unknown_preset_suggests_close_names", "[errors]")
{
  std::string yaml = good;
  yaml.replace(yaml.find("preset: gpt2"), 12, "preset: llama-2-7");
  std::string err = refused("unknown_model", yaml);
  CHECK_THAT(err, Catch::Contains("unknown model preset 'llama-2-7'") && Catch::Contains("did you mean llama-2-7b"));
  std::string yaml2 = good;
  yaml2.replace(yaml2.find("node: desktop-4070"), 18, "node: dgx-a10");
  std::string err2 = refused("unknown_node", yaml2);
  CHECK_THAT(err2, Catch::Contains("unknown node preset 'dgx-a10'") && Catch::Contains("dgx-a100"));
}

TEST_CASE("a_missing_hf_config_file_is_refused_with_its_path", "[errors]")
{
  std::string yaml = good;
  yaml.replace(yaml.find("preset: gpt2"), 12, "hf_config: no/such/config.json");
  std::string err = refused("missing_hf", yaml);
  CHECK_THAT(err, Catch::Contains("model.hf_config") && Catch::Contains("no/such/config.json") &&
                      Catch::Contains("not found"));
}

TEST_CASE("a_tp_pp_dp_product_other_than_the_gpu_count_is_refused", "[errors]")
{
  std::string yaml = "hardware: {node: dgx-a100}\nmodel: {preset: gpt2}\ntraining: {dp: 3, global_batch: 24}\n";
  std::string err  = refused("bad_dp", yaml);
  CHECK_THAT(err, Catch::Contains("training.dp") && Catch::Contains("1 x 1 x 3 = 3 but the hardware has 8 GPUs"));
}

TEST_CASE("a_global_batch_that_micro_batches_times_dp_do_not_divide_is_refused", "[errors]")
{
  std::string yaml =
      "hardware: {node: dgx-a100}\nmodel: {preset: gpt2}\ntraining: {global_batch: 12, micro_batch: 1}\n";
  std::string err = refused("bad_batch", yaml);
  CHECK_THAT(err, Catch::Contains("training.global_batch") && Catch::Contains("micro_batch x dp = 8"));
}

TEST_CASE("a_precision_the_gpu_lacks_is_refused_with_what_it_supports", "[errors]")
{
  std::string yaml = "hardware: {node: cloud-t4}\nmodel: {preset: gpt2}\ntraining: {precision: bf16, global_batch: 1, "
                     "micro_batch: 1}\n";
  std::string err  = refused("bad_precision", yaml);
  CHECK_THAT(err, Catch::Contains("bf16 is not supported by t4") && Catch::Contains("fp16"));
}

TEST_CASE("a_bad_set_override_is_refused", "[errors]")
{
  std::string err = refused("bad_set", good, "--set training.micro_batch");
  CHECK_THAT(err, Catch::Contains("expected KEY=VALUE"));
  std::string err2 = refused("bad_set_key", good, "--set training.micro_batchh=2");
  CHECK_THAT(err2, Catch::Contains("training.micro_batchh") && Catch::Contains("unknown key"));
}

TEST_CASE("a_missing_spec_file_and_an_unwritable_output_folder_are_refused", "[errors]")
{
  CliResult r = run_cli("run " + temp_path("does-not-exist.yaml"));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("spec file not found"));
  std::string spec = temp_path("good2.yaml");
  write_file(spec, good);
  CliResult w = run_cli("run " + spec + " -o /no/such/folder/run.h5");
  CHECK(w.exit_code == 2);
  CHECK_THAT(w.err, Catch::Contains("does not exist"));
}

TEST_CASE("an_unknown_command_or_option_exits_2", "[errors]")
{
  CHECK(run_cli("frobnicate").exit_code == 2);
  CHECK(run_cli("run --frobnicate").exit_code == 2);
  CHECK(run_cli("list planets").exit_code == 2);
}

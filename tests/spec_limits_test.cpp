// Hostile and absurd values in specs, each of which could crash, hang or run on silently
// wrong numbers: each gets one line on stderr and exit code 2 (bad input) or 3 (a
// failure while simulating), never a signal.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sys/stat.h>

using namespace memwall::test;

namespace {

std::string with_set(const std::string& name, const std::string& set)
{
  return refused(name, small_training_spec, "--set '" + set + "'");
}

} // namespace

TEST_CASE("rates_and_times_beyond_any_hardware_are_refused_with_the_limit_named", "[robustness][limits]")
{
  // 1e-300 B/s made one kernel outlast a double's range: the replay then stalled
  // ("the op DAG has a cycle") and SimGrid's destructors segfaulted (exit 139).
  CHECK_THAT(with_set("tiny_bw", "hardware.gpu.hbm_achievable_bw=1e-300"),
             Catch::Contains("hardware.gpu.hbm_achievable_bw") && Catch::Contains("[1000, 1e18] B/s") &&
                 Catch::Contains("1e-300"));
  // 1e308 PB/s overflowed to inf inside SimGrid: an 81-line backtrace.
  CHECK_THAT(with_set("huge_nvlink", "hardware.gpu.nvlink_bw=1e308 PB/s"),
             Catch::Contains("hardware.gpu.nvlink_bw") && Catch::Contains("1e18"));
  CHECK_THAT(with_set("huge_overhead", "hardware.gpu.kernel_overhead_s=1e300"),
             Catch::Contains("hardware.gpu.kernel_overhead_s") && Catch::Contains("[1e-12, 10000] s"));
}

TEST_CASE("integers_past_their_limit_are_refused_not_truncated_to_int", "[robustness][limits]")
{
  // 4294967296 = 2^32 passed the integer check and became 0 in an int: ZeRO-3 ran as
  // ZeRO-0 without a word, 2^32 sockets divided by zero (SIGFPE), 2^32 NICs became none.
  CHECK_THAT(with_set("zero_2_32", "training.zero=4294967296"),
             Catch::Contains("training.zero") && Catch::Contains("must lie in [0, 3]"));
  CHECK_THAT(with_set("sockets_2_32", "hardware.node={preset: desktop-4070, sockets: 4294967296}"),
             Catch::Contains("hardware.node.sockets") && Catch::Contains("[1, 1024]"));
  CHECK_THAT(with_set("nics_2_32", "hardware.network.nics=4294967296"),
             Catch::Contains("hardware.network.nics") && Catch::Contains("[0, 1024]"));
}

TEST_CASE("an_efficiency_above_one_is_refused_naming_its_own_key", "[robustness][limits]")
{
  // attention_efficiency=2 was refused as "matmul_efficiency: ...", and `list params`
  // showed both as numbers in [0, 1e+15].
  CHECK_THAT(with_set("attn_eff_2", "hardware.gpu.attention_efficiency=2"),
             Catch::Contains("hardware.gpu.attention_efficiency") && Catch::Contains("[0, 1]") &&
                 !Catch::Contains("matmul_efficiency"));
  CHECK_THAT(with_set("attn_eff_0", "hardware.gpu.attention_efficiency=0"),
             Catch::Contains("hardware.gpu.attention_efficiency") && Catch::Contains("(0, 1]"));
  CHECK_THAT(run_cli("list params").out, Catch::Contains("number in [0, 1]"));
  // A decode kernel's share of the bandwidth at 0 would stream nothing (it silently fell
  // back to the HBM's full rate).
  for (const char* key : {"kv_read_small_share", "kv_read_share", "kv_read_fp8_factor"})
    CHECK_THAT(with_set(std::string("kv_read_0_") + key, std::string("hardware.gpu.") + key + "=0"),
               Catch::Contains(std::string("hardware.gpu.") + key) && Catch::Contains("(0, 1]"));
}

TEST_CASE("a_step_too_large_to_hold_in_memory_is_refused_before_it_is_built", "[robustness][limits]")
{
  // layers = 1e6 or global_batch = 9e15 ran for a minute into std::bad_alloc.
  CHECK_THAT(with_set("million_layers", "model={preset: gpt2, layers: 1000000}"),
             Catch::Contains("model.layers") && Catch::Contains("[1, 10000]"));
  // 2,000,000 micro-batches x 12 layers = 24 million layer passes per GPU.
  CHECK_THAT(with_set("many_micro_batches", "training.global_batch=2000000"),
             Catch::Contains("training.global_batch") && Catch::Contains("24000000 layer passes") &&
                 Catch::Contains("limit 1000000"));
}

// [no_sanitizer]: not registered in sanitized builds (tests/CMakeLists.txt), where
// AddressSanitizer reserves terabytes of address space and no address-space limit applies.
TEST_CASE("running_out_of_host_memory_mid_replay_is_exit_3_with_one_line", "[robustness][runtime][no_sanitizer]")
{
#if defined(MEMWALL_SANITIZED)
  WARN("skipped: AddressSanitizer reserves terabytes of address space, an address-space limit cannot apply");
  return;
#endif
  // The 1T example with -o keeps a record of each of its 4.4 M ops (about 1 GB); at
  // 600 MB of address space it fails while it simulates. Left to itself, SimGrid prints a
  // stack trace per pending activity and its static destructors crash on the activities
  // left pending (exit 139). (Without -o it stores each repeated pass once
  // and fits in less than 200 MB.)
  std::string out = temp_path("oom_mid_replay.h5");
  CliResult r     = run_cli("run " + source_path("examples/megatron-1t-tp8-pp64-384xdgx-a100.yaml") + " -o " + out,
                            "ulimit -v 600000;");
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::Contains("out of host memory"));
  CHECK_FALSE(std::filesystem::exists(out)); // no partial output file
}

TEST_CASE("a_spec_that_is_a_fifo_a_directory_or_a_symlink_loop_is_refused_without_blocking", "[robustness][files]")
{
  // A FIFO was opened before the regular-file check: the read blocked forever. A
  // symlink loop threw filesystem_error (exit 3).
  std::string fifo = temp_path("spec.fifo");
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string loop_a = temp_path("loop_a.yaml"), loop_b = temp_path("loop_b.yaml");
  std::filesystem::remove(loop_a);
  std::filesystem::remove(loop_b);
  std::filesystem::create_symlink(loop_b, loop_a);
  std::filesystem::create_symlink(loop_a, loop_b);
  struct Case {
    std::string path, expect;
  };
  for (const Case& c : {Case{fifo, "spec file is a FIFO, not a regular file"},
                        Case{temp_path(""), "spec file is a directory, not a regular file"},
                        Case{loop_a, "Too many levels of symbolic links"}}) {
    CliResult r = run_cli("run " + c.path, "timeout 20");
    INFO(c.path << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains(c.expect));
  }
}

TEST_CASE("a_number_out_of_range_in_an_hf_config_is_bad_input", "[robustness][files]")
{
  // nlohmann::json throws out_of_range (not parse_error) for 1e400: it was reported as a
  // runtime failure, exit 3.
  std::string cfg = temp_path("huge-config.json");
  write_file(cfg, "{\"model_type\": \"llama\", \"num_hidden_layers\": 1e400}");
  std::string err = refused("hf_huge", "hardware: {node: desktop-4070}\nmodel: {hf_config: " + cfg +
                                           "}\ntraining: {seq_len: 256, global_batch: 1, micro_batch: 1}\n");
  CHECK_THAT(err, Catch::Contains("huge-config.json: not valid JSON"));
  write_file(cfg, "{\"model_type\": \"llama\", \"num_hidden_layers\": 100000, \"hidden_size\": 64, "
                  "\"num_attention_heads\": 1, \"intermediate_size\": 64, \"vocab_size\": 100}");
  CHECK_THAT(refused("hf_layers", "hardware: {node: desktop-4070}\nmodel: {hf_config: " + cfg +
                                      "}\ntraining: {seq_len: 256, global_batch: 1, micro_batch: 1}\n"),
             Catch::Contains("model.hf_config") && Catch::Contains("layers = 100000 exceeds the limit of 10000"));
}

TEST_CASE("duplicate_yaml_keys_are_refused_naming_both_lines", "[robustness][spec]")
{
  // yaml-cpp keeps duplicates and a lookup finds the first: the second training
  // section was ignored without a word.
  std::string err = refused("duplicate_section", small_training_spec + "training:\n  micro_batch: 2\n");
  CHECK_THAT(err, Catch::Contains("duplicate_section.yaml:9: duplicate key 'training' (first given on line 5)"));
  CHECK_THAT(refused("duplicate_key", "hardware: {node: desktop-4070, node: dgx-a100}\nmodel: {preset: gpt2}\n"
                                      "training: {seq_len: 256, global_batch: 2, micro_batch: 1}\n"),
             Catch::Contains("duplicate key 'node'"));
}

TEST_CASE("errors_about_a_set_value_name_the_set_argument_not_line_1", "[robustness][spec]")
{
  // A --set value is its own one-line YAML document: errors said "spec.yaml:1".
  std::string err = with_set("set_named", "training.micro_batch=0");
  CHECK_THAT(err, Catch::Contains("set_named.yaml: --set training.micro_batch: must lie in [1, "));
  CHECK_THAT(with_set("set_typo", "training.micro_bach=2"),
             Catch::Contains("--set training.micro_bach: unknown key (did you mean micro_batch?)"));
  // One field of the node's GPU, without restating the rest of it (was: "hardware.gpu.name
  // is required").
  std::string spec = temp_path("set_gpu_field.yaml");
  write_file(spec, small_training_spec);
  CliResult ok = run_cli("run " + spec + " --json --set hardware.gpu.hbm_achievable_bw=400e9");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("a_set_below_a_preset_id_overrides_one_field_of_that_preset", "[robustness][spec]")
{
  // `--set hardware.gpu=ID --set hardware.gpu.memory_bytes=...` was refused ("'hardware.gpu'
  // is not a mapping"): the id is now read as {preset: ID}. The A100-40GB keeps its own
  // speeds (its 1,555 GB/s datasheet bandwidth) and takes the new capacity.
  std::string spec = temp_path("set_below_preset.yaml");
  write_file(spec, small_training_spec);
  CliResult r =
      run_cli("run " + spec + " --set hardware.gpu=a100-sxm4-40gb --set hardware.gpu.memory_bytes=80e9 --json");
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["devices"][0]["hardware"] == "a100-sxm4-40gb-custom");
  CHECK(j["devices"][0]["capacity_bytes"].get<double>() == 80e9);
  // Still an error below a list or a number.
  CHECK_THAT(run_cli("run " + spec + " --set training.seq_len.x=1").err, Catch::Contains("training.seq_len"));
}

TEST_CASE("a_spec_that_is_not_a_mapping_is_refused_even_with_set", "[robustness][spec]")
{
  // --set into a scalar document threw yaml-cpp's BadSubscript: exit 3.
  CHECK_THAT(refused("scalar_spec", "just words\n", "--set training.micro_batch=2"),
             Catch::Contains("a spec is a mapping"));
  CHECK_THAT(refused("list_spec", "- 1\n- 2\n", "--set training.micro_batch=2"),
             Catch::Contains("a spec is a mapping"));
}

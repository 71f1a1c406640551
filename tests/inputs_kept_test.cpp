// An output never replaces an input (issue 37, findings 6, 7 and 10): -o and --trace
// were checked against the spec alone, so they overwrote the HF config, the request
// trace, the profile and the profiler trace a spec read, a sweep's base spec, or the
// measurements `calibrate fit` read, with exit 0. Each is refused now, before any work,
// and the input keeps its bytes.
#include "base/AtomicOutput.hpp"
#include "tests/DamagedFiles.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace memwall::test;
namespace fs = std::filesystem;

namespace {

// `command` is refused naming `input` as the output's input, and `input` is unchanged.
void input_kept(const std::string& command, const std::string& input)
{
  std::string before = read_file(input);
  REQUIRE_FALSE(before.empty());
  refused_file(command, "output is the input");
  CHECK(read_file(input) == before);
}

std::string copy_to_temp(const std::string& source, const std::string& name)
{
  std::string to = temp_path(name);
  fs::copy_file(source, to, fs::copy_options::overwrite_existing);
  return to;
}

// A folder holding a tiny GPT-2's config.json and spec.yaml, a training spec that reads it.
std::string hf_spec_dir(const std::string& name)
{
  std::string dir = temp_path(name);
  fs::create_directories(dir);
  write_file(dir + "/config.json", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4,
    "vocab_size": 100, "n_positions": 1024})");
  write_file(dir + "/spec.yaml", "hardware: {node: desktop-4070}\nmodel: {hf_config: config.json}\n"
                                 "training: {seq_len: 256, global_batch: 2, micro_batch: 1}\n");
  return dir;
}

} // namespace

TEST_CASE("run_outputs_never_replace_a_file_the_spec_read", "[robustness][outputs]")
{
  std::string dir = hf_spec_dir("kept-hf"), config = dir + "/config.json", hf = dir + "/spec.yaml";
  input_kept("run " + hf + " -o " + config, config);
  input_kept("run " + hf + " --trace " + dir + "/./config.json", config);

  std::string requests = temp_path("kept_requests.csv");
  write_file(requests, "arrival_time,prompt_tokens,output_tokens\n0.0,12,3\n0.1,20,3\n");
  std::string serving = temp_path("kept_serving.yaml");
  write_file(serving, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\ninference: {trace: " +
                          requests + "}\n");
  input_kept("run " + serving + " --trace " + requests, requests);

  std::string profile = copy_to_temp(source_path("hwmodels/catalog/profiles/h100-sxm-80gb.yaml"), "kept_profile.yaml");
  input_kept("run " + source_path("examples/gpt2-1gpu-a100.yaml") +
                 " --set hardware.node=dgx-h100 --set hardware.profile=" + profile + " -o " + profile,
             profile);

  std::string trace  = copy_to_temp(source_path("tests/data/traces/v100-1rank.json.gz"), "kept_trace.json.gz");
  std::string replay = temp_path("kept_replay.yaml");
  write_file(replay, "hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: " + trace + "}\n");
  input_kept("run " + replay + " --trace " + trace, trace);
}

TEST_CASE("a_sweep_never_writes_over_its_base_spec_nor_calibrate_over_its_measurements", "[robustness][outputs]")
{
  std::string base = temp_path("kept_base.yaml");
  write_file(base, small_training_spec);
  std::string sweep = temp_path("kept_sweep.yaml");
  write_file(sweep, "base: kept_base.yaml\ngrid:\n  training.micro_batch: [1, 2]\n");
  input_kept("sweep " + sweep + " -o " + base, base);

  std::string meas = copy_to_temp(source_path("calibration/data/measured/h100/gemm.csv"), "kept_meas.csv");
  input_kept("calibrate fit " + meas + " -o " + meas, meas);
}

TEST_CASE("two_names_of_one_file_are_one_output", "[robustness][outputs]")
{
  // "-o x.h5 --trace ./x.h5" passed a string comparison; the trace then replaced the run.
  std::string spec = temp_path("one_file.yaml");
  write_file(spec, small_training_spec);
  std::string h5 = temp_path("one_file.h5");
  fs::remove(h5);
  refused_file("run " + spec + " -o " + h5 + " --trace " + fs::path(h5).parent_path().string() + "/./one_file.h5",
               "-o and --trace name the same file");
  CHECK_FALSE(fs::exists(h5));
}

TEST_CASE("run_does_not_replace_a_file_that_a_sweep_is_writing", "[robustness][outputs]")
{
  // run -o ignored the sweep's lock: it replaced the sweep's file, and when the sweep
  // died its finished points were gone.
  std::string spec = temp_path("locked_run.yaml");
  write_file(spec, small_training_spec);
  std::string h5 = temp_path("locked.h5");
  write_file(h5, "a sweep's results");
  {
    memwall::OutputLock sweep_holds_it(h5); // as a running sweep holds its file
    refused_file("run " + spec + " -o " + h5, "another memwall process is writing this file");
    CHECK(read_file(h5) == "a sweep's results");
  }
  CliResult r = run_cli("run " + spec + " -o " + h5);
  CHECK(r.exit_code == 0);
}

TEST_CASE("plot_writes_through_no_link_planted_beside_its_output", "[robustness][outputs]")
{
  // The script saved to the fixed name .OUT.png.tmp.png, following a link planted there
  // into its target.
  std::string h5  = damaged_sweep_file("plot_link", [](H5::H5File&) {});
  std::string out = temp_path("plot_link.png"), victim = temp_path("plot_victim.txt");
  write_file(victim, "keep me");
  std::string planted = temp_path(".plot_link.png.tmp.png");
  fs::remove(planted);
  fs::create_symlink(victim, planted);
  CliResult r = run_cli("plot " + h5 + " -o " + out);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_file(victim) == "keep me");
  CHECK(read_file(out).compare(1, 3, "PNG") == 0);
}

TEST_CASE("an_output_name_near_the_file_systems_limit_is_written", "[robustness][outputs]")
{
  // A valid 253-byte name failed: its temporary and lock files' names, longer still,
  // were over the 255-byte limit.
  std::string spec = temp_path("long_name.yaml");
  write_file(spec, small_training_spec);
  std::string name = std::string(250, 'r') + ".h5";
  std::string h5   = temp_path(name);
  CliResult r      = run_cli("run " + spec + " -o " + h5);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::file_size(h5) > 0);
}

TEST_CASE("a_sweep_never_writes_over_a_file_its_base_spec_or_an_axis_reads", "[robustness][outputs]")
{
  // The sweep checked its output against the sweep and base specs only: -o naming the HF
  // config, request trace or profile the base spec reads replaced it, with exit 0. The
  // base spec's inputs are read before anything runs now, and so is any axis value that
  // names a file.
  std::string dir = hf_spec_dir("kept-sweep-hf"), config = dir + "/config.json";
  write_file(dir + "/sweep.yaml", "base: spec.yaml\ngrid:\n  training.micro_batch: [1, 2]\n");
  input_kept("sweep " + dir + "/sweep.yaml -o " + config, config);

  std::string requests = temp_path("kept_sweep_requests.csv");
  write_file(requests, "arrival_time,prompt_tokens,output_tokens\n0.0,12,3\n0.1,20,3\n");
  std::string sweep = temp_path("kept_sweep_trace.yaml");
  write_file(sweep, "spec:\n  hardware: {node: dgx-a100, gpus_per_node: 1}\n  model: {preset: gpt2}\n"
                    "  inference: {trace: " +
                        requests + "}\ngrid:\n  inference.max_num_seqs: [1, 2]\n");
  input_kept("sweep " + sweep + " -o " + requests, requests);

  std::string profile = copy_to_temp(source_path("hwmodels/catalog/profiles/h100-sxm-80gb.yaml"), "kept_axis.yaml");
  std::string axis    = temp_path("kept_sweep_axis.yaml");
  write_file(axis, sweep_base + "grid:\n  hardware.node: [dgx-h100]\n  hardware.profile: [" + profile + "]\n");
  input_kept("sweep " + axis + " -o " + profile, profile);
}

TEST_CASE("an_output_name_over_the_file_systems_limit_is_refused_before_the_run", "[robustness][outputs]")
{
  // 300 bytes: the run went to its end and failed renaming its file into place (exit 3).
  std::string spec = temp_path("too_long_name.yaml");
  write_file(spec, small_training_spec);
  std::string h5 = temp_path(std::string(297, 'r') + ".h5");
  refused_file("run " + spec + " -o " + h5, "output file name of 300 bytes; the file system takes 255 at most");
  std::string sweep = temp_path("too_long_sweep.yaml");
  write_file(sweep, sweep_base + "grid:\n  training.micro_batch: [1, 2]\n");
  refused_file("sweep " + sweep + " -o " + h5, "output file name of 300 bytes");
}

TEST_CASE("a_profile_whose_file_name_is_not_utf8_is_named_in_the_outputs", "[robustness][outputs]")
{
  // A byte 0xff in the profile's file name: run --json and run -o ended in exit 3 with
  // the JSON library's message after the whole run. The name is written with U+FFFD.
  std::string profile =
      copy_to_temp(source_path("hwmodels/catalog/profiles/h100-sxm-80gb.yaml"), "profile-\xff-h100.yaml");
  std::string spec = temp_path("not_utf8.yaml");
  write_file(spec, small_training_spec);
  std::string args = "run " + spec +
                     " --set hardware.node=dgx-h100 --set hardware.gpus_per_node=1 --set 'hardware.profile=" + profile +
                     "'";
  CliResult js = run_cli(args + " --json");
  INFO(js.err);
  REQUIRE(js.exit_code == 0);
  CHECK_THAT(js.out, Catch::Contains("profile-\xEF\xBF\xBD-h100")); // U+FFFD in UTF-8
  std::string h5 = temp_path("not_utf8.h5");
  fs::remove(h5);
  CliResult o = run_cli(args + " -o " + h5);
  INFO(o.err);
  CHECK(o.exit_code == 0);
  CHECK(fs::file_size(h5) > 0);
}

// Bad sweep input: one line naming the file and what is allowed, exit code 2, and no
// results file written.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace memwall::test;

namespace {

const char* base = "spec:\n  hardware: {node: dgx-a100, gpus_per_node: 1}\n  model: {preset: gpt2}\n"
                   "  training: {seq_len: 512, global_batch: 8, micro_batch: 1}\n";

// Runs `memwall sweep` (extra arguments after) on a sweep spec; expects the refusal.
std::string refused_sweep(const std::string& name, const std::string& text, const std::string& extra = "")
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, text);
  if (extra.empty())
    std::filesystem::remove(h5);
  CliResult r = run_cli("sweep " + spec + " -o " + h5 + " " + extra);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  if (extra.empty())
    CHECK_FALSE(std::filesystem::exists(h5));
  return r.err;
}

} // namespace

TEST_CASE("an_unknown_axis_key_is_refused_naming_the_file_and_the_key", "[errors][sweep]")
{
  std::string err = refused_sweep("sweep_typo", std::string(base) + "grid:\n  training.micro_bach: [1, 2]\n");
  CHECK_THAT(err, Catch::Contains("sweep_typo.yaml:6: grid.training.micro_bach: unknown axis key"));
}

TEST_CASE("an_empty_axis_is_refused", "[errors][sweep]")
{
  std::string err = refused_sweep("sweep_empty", std::string(base) + "grid:\n  training.micro_batch: []\n");
  CHECK_THAT(err, Catch::Contains("grid.training.micro_batch: empty axis"));
}

TEST_CASE("zipped_axes_of_different_lengths_are_refused", "[errors][sweep]")
{
  std::string err = refused_sweep(
      "sweep_zip", std::string(base) + "zip:\n  training.micro_batch: [1, 2]\n  training.zero: [0, 1, 2]\n");
  CHECK_THAT(err, Catch::Contains("need equal lengths"));
}

TEST_CASE("a_filter_naming_no_axis_is_refused", "[errors][sweep]")
{
  std::string err = refused_sweep("sweep_filter",
                                  std::string(base) + "grid:\n  training.micro_batch: [1, 2]\nfilter: \"micro > 1\"\n");
  CHECK_THAT(err, Catch::Contains("filter") && Catch::Contains("unknown name 'micro'"));
}

TEST_CASE("resuming_into_a_file_that_is_not_a_memwall_sweep_is_refused", "[errors][sweep]")
{
  // A run file is HDF5 from memwall, but not a sweep's.
  std::string run_h5 = temp_path("sweep_resume_not_mine.h5");
  REQUIRE(run_cli("run " + source_path("examples/gpt2-1gpu-a100.yaml") + " -o " + run_h5).exit_code == 0);
  std::string spec = temp_path("sweep_resume_not_mine.yaml");
  write_file(spec, std::string(base) + "grid:\n  training.micro_batch: [1, 2]\n");
  CliResult r = run_cli("sweep " + spec + " -o " + run_h5 + " --resume");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("a run file, not a sweep results file"));
}

TEST_CASE("resuming_into_a_truncated_results_file_is_refused", "[errors][sweep]")
{
  std::string spec = temp_path("sweep_truncated.yaml"), h5 = temp_path("sweep_truncated.h5");
  write_file(spec, std::string(base) + "grid:\n  training.micro_batch: [1, 2]\n");
  REQUIRE(run_cli("sweep " + spec + " -o " + h5).exit_code == 0);
  std::filesystem::resize_file(h5, std::filesystem::file_size(h5) / 2);
  CliResult r = run_cli("sweep " + spec + " -o " + h5 + " --resume");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::Contains(h5));
}

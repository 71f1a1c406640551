// Hostile and absurd input (issue 13): every case here crashed, hung, lost results or
// ran on silently wrong numbers before its fix. Each now gets one line on stderr and
// exit code 2 (bad input) or 3 (a failure while simulating), never a signal.
#include "TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

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
             Catch::Contains("hardware.gpu.hbm_achievable_bw") && Catch::Contains("[1000, 1e+18] B/s") &&
                 Catch::Contains("1e-300"));
  // 1e308 PB/s overflowed to inf inside SimGrid: an 81-line backtrace.
  CHECK_THAT(with_set("huge_nvlink", "hardware.gpu.nvlink_bw=1e308 PB/s"),
             Catch::Contains("hardware.gpu.nvlink_bw") && Catch::Contains("1e+18"));
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
             Catch::Contains("hardware.node.sockets") && Catch::Contains("[1, 16]"));
  CHECK_THAT(with_set("nics_2_32", "hardware.network.nics=4294967296"),
             Catch::Contains("hardware.network.nics") && Catch::Contains("[0, 64]"));
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

TEST_CASE("running_out_of_host_memory_mid_replay_is_exit_3_with_one_line", "[robustness][runtime]")
{
#if defined(MEMWALL_SANITIZED)
  SKIP("AddressSanitizer reserves terabytes of address space: an address-space limit cannot apply");
#endif
  // The 1T example needs ~2.3 GB; at 1 GB of address space it fails mid-replay. SimGrid
  // used to print a stack trace per pending activity, and its static destructors then
  // crashed on the activities left pending (exit 139).
  CliResult r = run_cli("run " + source_path("examples/megatron-1t-tp8-pp64-384xdgx-a100.yaml"), "ulimit -v 1000000;");
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::Contains("out of host memory"));
}

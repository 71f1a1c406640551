// What users hit first: the version, durations in readable units, a
// progress line on a terminal, and servers that do not fit or offload their KV cache
// saying so plainly.
#include "base/Quantity.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>

using namespace memwall::test;

TEST_CASE("version_and_human_units", "[robustness][usability]")
{
  CliResult v = run_cli("--version");
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::StartsWith("memwall 0.") && Catch::Contains("commit"));
  // 210851.71 ms read as 210.9 s; 3.86e+04 PFLOP as 38.6 EFLOP.
  CHECK(memwall::format_duration(210.85171) == "210.9 s");
  CHECK(memwall::format_duration(0.01241) == "12.41 ms");
  CHECK(memwall::format_duration(85.3e-6) == "85.3 us");
  CHECK(memwall::format_duration(8316) == "2.31 h");
  CHECK(memwall::format_duration(0) == "0 s");
  CHECK(memwall::format_si(3.86e19, "FLOP") == "38.6 EFLOP");
}

TEST_CASE("a_server_whose_weights_do_not_fit_says_so_and_reports_no_latencies", "[robustness][inference]")
{
  // Llama-2-70B in fp16 on one A100 80GB: 68.98e9 x 2 B = 128.5 GiB of weights against
  // 0.9 x 81,158 MiB = 71.3 GiB the server may use: it does not fit, said so, not as
  // "4 rejected (longer than the KV cache)" with latencies of 0.0 ms.
  std::string spec = temp_path("weights_do_not_fit.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: llama-2-70b}\n"
                   "inference:\n  poisson: {rate: 1, requests: 4, prompt_len: 128, output_len: 16}\n");
  CliResult text = run_cli("run " + spec);
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  // The GPU needs the weights, 128.45 GiB, and the 0.47 GiB CUDA context: 128.9 GiB of
  // the 81,158 MiB = 79.26 GiB CUDA reports, 49.7 GiB over (the first failing allocation
  // is the weights').
  CHECK_THAT(text.out, Catch::Contains("DID NOT FIT    node0.gpu0 needs 128.9") &&
                           Catch::Contains("of 79.26 GiB (49.6") && Catch::Contains("allocation weights") &&
                           Catch::Contains("no room for any KV cache") &&
                           Catch::Contains("time to first  none: the server did not fit"));
  CHECK_THAT(text.out, !Catch::Contains("0.0 us"));
  CliResult js = run_cli("run " + spec + " --json");
  auto j       = nlohmann::json::parse(js.out);
  CHECK(j["ttft_s"]["p50"].is_null());
  CHECK(j["latency_s"]["mean"].is_null());
  double usable = 0.9 * 81920.0 * 1048576.0, weights = 68.98e9 * 2;
  CHECK(j["kv_cache"]["budget_bytes"].get<double>() == 0); // none, not a negative figure
  CHECK(j["kv_cache"]["shortfall_bytes"].get<double>() >= weights - usable);
}

TEST_CASE("a_long_run_shows_progress_on_a_terminal_and_nowhere_else", "[robustness][usability]")
{
  // The GPT-3 175B example replays ~364k ops; redrawn every 4096 ops (no interval),
  // whatever the machine's speed.
  std::string spec = source_path("examples/gpt3-175b-tp8-pp8-interleaved-8xdgx-a100.yaml");
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    WARN("skipped: no script(1) to give the run a terminal");
    return;
  }
  std::string cmd = "MEMWALL_PROGRESS_INTERVAL_S=0 script -qec \"" + std::string(MEMWALL_BINARY) + " run " + spec +
                    " 2>&1 >/dev/null\" /dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string tty;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
    tty.append(buf, n);
  CHECK(::pclose(p) == 0);
  CHECK_THAT(tty, Catch::Contains("replay: ") && Catch::Contains("ops (") && Catch::Contains("left"));
  // Redirected to a file, stderr stays empty on success.
  CliResult r = run_cli("run " + spec);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
}

TEST_CASE("with_kv_offloaded_the_kv_line_says_which_bytes_are_on_the_gpu", "[robustness][inference]")
{
  // "room for N tokens (6.30 GiB)" mixed a token count limited by host memory with the
  // GPU's budget in GiB, and a peak of 44.54 GiB against it.
  std::string spec = temp_path("kv_offloaded.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                   "inference:\n  batch: 8\n  prompt_len: 128\n  output_len: 8\n"
                   "  offload: {kv: cpu, kv_fraction: 0.5}\n");
  CliResult r = run_cli("run " + spec);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("on the GPU; 50 % of each token's KV on host memory") &&
                        Catch::Contains("(GPU and offloaded together)"));
  auto j = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  CHECK(j["kv_cache"]["offloaded_fraction"].get<double>() == 0.5);
  CHECK(j["kv_cache"]["offload_place"] == "cpu");
}

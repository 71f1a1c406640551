// Requests a server turns away: over max_model_len (refused on arrival, as vLLM's server
// answers them) or longer than the whole KV cache, each counted by its reason; and the
// lengths a clipped distribution really produced, reported beside what was asked.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace memwall::test;

TEST_CASE("over_long_requests_of_a_trace_are_refused_on_arrival_and_counted_by_reason", "[serving][rejections]")
{
  // GPT-2's context is 1024 tokens: 2,000 prompt tokens are over it, 1,000 + 100 are
  // over it together; the other two rows are served.
  write_file(temp_path("reject_trace.csv"), "arrival_time,prompt_tokens,output_tokens\n"
                                            "0.0,100,10\n0.1,2000,10\n0.2,1000,100\n0.3,50,5\n");
  nlohmann::json j = run_json("reject_trace", "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                                              "inference: {trace: reject_trace.csv}\n");
  CHECK(j["requests_completed"] == 2);
  CHECK(j["requests_rejected"] == 2);
  CHECK(j["requests_rejected_by_reason"]["prompt_too_long"] == 1);
  CHECK(j["requests_rejected_by_reason"]["exceeds_context"] == 1);
  CHECK(j["requests_rejected_by_reason"]["kv_cache"] == 0);
  CHECK(j["request_lengths"]["prompt_tokens"]["max"] == 2000);
  CHECK(j["request_lengths"]["prompt_tokens"]["mean"].get<double>() == Approx((100 + 2000 + 1000 + 50) / 4.0));
}

TEST_CASE("a_clipped_exponential_reports_the_mean_it_came_out_as", "[serving][rejections]")
{
  // Exponential lengths of mean 1024 clipped at the default cap of 512: the mean is
  // E[min(X, 512)] = 1024 (1 - e^(-512/1024)) = 402.9 tokens, not 1024; the summary says
  // both, and the largest.
  const std::string spec = "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                           "inference: {poisson: {rate: 1000, requests: 2000, seed: 11, output_len: 2,\n"
                           "  prompt_len: {dist: exponential, mean: 1024}}}\n";
  nlohmann::json j       = run_json("clipped_lengths", spec);
  const double expected  = 1024 * (1 - std::exp(-0.5));
  CHECK(j["request_lengths"]["prompt_tokens"]["mean"].get<double>() == Approx(expected).epsilon(0.03));
  CHECK(j["request_lengths"]["prompt_tokens"]["max"] == 512);
  write_file(temp_path("clipped_lengths_text.yaml"), spec);
  CliResult r = run_cli("run " + temp_path("clipped_lengths_text.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("asked: exponential of mean 1024, clipped to 1-512"));
}

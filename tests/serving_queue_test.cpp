// The queue in front of a server: how long requests wait to be scheduled, how many wait,
// and whether the server keeps up with the load offered. Checked on an M/D/1 queue: one
// sequence at a time (max_num_seqs 1) of fixed lengths, so every request takes the same
// service time D, arriving as a Poisson process.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace memwall::test;

TEST_CASE("an_md1_server_waits_as_pollaczek_khinchine_says", "[serving][queue]")
{
  // D from one request alone; then Poisson arrivals at load about 0.5. The
  // Pollaczek-Khinchine mean wait of M/D/1 is W = lambda D^2 / (2 (1 - lambda D)), and by
  // Little's law lambda W requests wait on average. D is measured on the run itself:
  // latency less wait.
  double d0        = run_json("md1_alone", md1_serving_spec(0.001, 1))["latency_s"]["mean"].get<double>();
  double rate      = 0.5 / d0;
  nlohmann::json j = run_json("md1_half", md1_serving_spec(rate, 4000));
  double wait      = j["scheduling_delay_s"]["mean"].get<double>();
  double d         = j["latency_s"]["mean"].get<double>() - wait;
  double rho       = rate * d;
  INFO("D " << d << " s, rho " << rho);
  CHECK(rho == Approx(0.5).epsilon(0.05));
  double expected = rate * d * d / (2 * (1 - rho));
  CHECK(wait == Approx(expected).epsilon(0.10));
  CHECK(j["queue"]["mean_waiting"].get<double>() == Approx(rate * expected).epsilon(0.12));
  CHECK(j["load"]["saturated"] == false);
  CHECK(j["load"]["offered_requests_per_s"].get<double>() == Approx(rate).epsilon(0.05));
}

TEST_CASE("a_server_offered_more_than_it_can_serve_says_it_is_saturated", "[serving][queue]")
{
  // At load 1.5 an M/D/1 server completes 1 / D requests a second against 1.5 / D
  // offered: a third short, and the queue grows without bound.
  double d0        = run_json("md1_alone2", md1_serving_spec(0.001, 1))["latency_s"]["mean"].get<double>();
  nlohmann::json j = run_json("md1_over", md1_serving_spec(1.5 / d0, 400));
  CHECK(j["load"]["saturated"] == true);
  CHECK(j["load"]["served_requests_per_s"].get<double>() == Approx(1 / d0).epsilon(0.05));
  CHECK(j["queue"]["max_waiting"].get<int64_t>() > 50);
}

TEST_CASE("the_kv_share_of_the_budget_is_what_the_tokens_used_of_it", "[serving][queue]")
{
  // One request of 64 + 8 tokens: at most 72 tokens' KV (GPT-2: 2 x 12 layers x 768 x 2 B
  // = 36,864 B a token) of the budget, not the 98 % of reserved KV that holds tokens.
  nlohmann::json j = run_json("kv_share", md1_serving_spec(0.001, 1));
  double budget    = j["kv_cache"]["budget_bytes"].get<double>();
  CHECK(j["kv_cache"]["bytes_per_token"].get<double>() == 36864.0);
  CHECK(j["kv_cache"]["peak_used_share"].get<double>() <= 72 * 36864.0 / budget * (1 + 1e-12));
  CHECK(j["kv_cache"]["peak_used_share"].get<double>() >= 64 * 36864.0 / budget);
}

TEST_CASE("vllms_kv_budget_leaves_the_cuda_context_to_the_unused_memory", "[serving][kv]")
{
  // vLLM 0.11's worker: total x gpu_memory_utilization - (weights + the profile run's
  // peak + what grew outside torch since the snapshot taken after CUDA initialised): the
  // context (0.47 GiB here) is not taken off. OPT-13B on an A100-40GB as a fixed batch
  // (the LLM class on a small GPU: 8,192 tokens over 256 sequences): the profile's peak is
  // its MLP's, three streams and fc1's output and GELU's beside the int64 ids,
  // 8,192 x (2 x (3 x 5,120 + 2 x 20,480) + 24) = 922,943,488 B, over the sampler's
  // 575,750,144 (256 x 50,272 logits x 38 B, the stream), plus torch's cuBLAS workspace of
  // 8,519,680 B.
  nlohmann::json j =
      run_json("opt13_budget", "hardware: {node: dgx-a100, gpus_per_node: 1, gpu: a100-sxm4-40gb}\n"
                               "model: {preset: opt-13b}\ninference: {batch: 1, prompt_len: 16, output_len: 2}\n");
  double capacity = j["devices"][0]["capacity_bytes"].get<double>();
  double weights  = j["devices"][0]["peak_by_category"]["weights"].get<double>();
  double budget   = j["kv_cache"]["budget_bytes"].get<double>();
  CHECK(budget == Approx(0.9 * capacity - weights - 922943488.0 - 8519680.0).epsilon(1e-9));
}

TEST_CASE("a_stable_server_with_long_tailed_latencies_is_not_called_saturated", "[serving][queue]")
{
  // Llama-2-7B at 8 requests/s for 300 requests (examples/): never more than 2 waiting,
  // the wait flat. Counting completions over the second half of the arrivals (the first
  // criterion) found 7.03/s against 7.84/s offered and called it saturated: latencies of
  // 3.5 s median and 25 s p99 over a 37 s window shift completions out of it.
  nlohmann::json j =
      run_json("stable_long_tail", read_file(source_path("examples/llama2-7b-serving-poisson-1xa100.yaml")),
               "--set inference.poisson.requests=300");
  CHECK(j["queue"]["max_waiting"].get<int64_t>() <= 2);
  CHECK(j["load"]["saturated"] == false);
  CHECK(std::fabs(j["load"]["wait_growth"].get<double>()) < 0.01);
}

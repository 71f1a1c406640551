// Serving schedules: chunked prefill, static against continuous batching, and weight
// streaming of offloaded tp ranks that share one PCIe switch, all from replayed runs.
#include "analysis/StepReport.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

ExperimentSpec spec(const std::string& yaml) { return parse_spec(yaml, "test.yaml", ""); }

// A request trace in a temporary CSV file; rows are "arrival_s,prompt,output".
std::string trace(const std::string& name, const std::vector<std::string>& rows)
{
  std::string text = "arrival_time,prompt_tokens,output_tokens\n";
  for (const auto& r : rows)
    text += r + "\n";
  std::string path = temp_path(name);
  write_file(path, text);
  return path;
}

const RequestRecord& request(const RunResult& r, int64_t id)
{
  for (const auto& q : r.serving.requests)
    if (q.id == id)
      return q;
  FAIL("no request " << id);
  return r.serving.requests.front();
}

} // namespace

TEST_CASE("chunked_prefill_splits_a_long_prompt_into_token_budget_iterations_without_changing_the_work",
          "[inference][chunked]")
{
  // One request of 2000 prompt and 3 output tokens. Unchunked: one prefill iteration
  // (which samples the first token) and 2 decodes = 3 iterations. Chunked with a budget
  // of 512: chunks of 512, 512, 512 and 464 tokens, the last one samples, then 2
  // decodes = 6 iterations. The causal attention pairs of the chunks add up to those of
  // the whole prompt, so the model FLOPs are the same.
  auto run = [](bool chunked) {
    return simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: llama-2-7b}\n"
                         "inference: {poisson: {rate: 1, requests: 1, prompt_len: 2000, output_len: 3},\n"
                         "  chunked_prefill: " +
                         std::string(chunked ? "true, max_num_batched_tokens: 512" : "false") + "}\n"),
                    true);
  };
  RunResult whole = run(false), chunked = run(true);
  CHECK(report_json(whole)["iterations"] == 3);
  CHECK(report_json(chunked)["iterations"] == 6);
  CHECK(chunked.model_flops_per_step == Approx(whole.model_flops_per_step).epsilon(1e-12));
  // Four smaller GEMMs re-read the weights four times: the first token comes later.
  CHECK(report_json(chunked)["ttft_s"]["mean"].get<double>() > report_json(whole)["ttft_s"]["mean"].get<double>());
}

TEST_CASE("chunked_prefill_bounds_the_pause_a_long_prompt_causes_in_running_decodes", "[inference][chunked]")
{
  // Request 0 decodes 64 tokens; request 1 arrives 50 ms later with a 4000-token prompt.
  // Without chunking its prefill runs alone and request 0 waits for all of it: at least
  // 2 x 6.74e9 parameters x 4000 tokens / 312e12 FLOP/s (A100 bf16 peak) = 0.173 s.
  // With a 512-token budget each iteration carries request 0's decode and at most 511
  // prompt tokens, so its longest pause is about 512/4000 of that (Agrawal et al.,
  // Sarathi-Serve, OSDI'24: "stall-free" batching).
  std::string path = trace("long_prompt_during_decode.csv", {"0,16,64", "0.05,4000,2"});
  auto run         = [&](bool chunked) {
    return simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: llama-2-7b}\n"
                                         "inference: {trace: " +
                                 path + ", chunked_prefill: " +
                                 std::string(chunked ? "true, max_num_batched_tokens: 512" : "false") + "}\n"),
                            true);
  };
  RunResult whole = run(false), chunked = run(true);
  double stall = request(whole, 0).max_itl_s, bounded = request(chunked, 0).max_itl_s;
  INFO("longest pause unchunked " << stall << " s, chunked " << bounded << " s");
  CHECK(stall > 2 * 6.74e9 * 4000 / 312e12);
  CHECK(bounded < 0.25 * stall);
  CHECK(report_json(chunked)["max_itl_s"]["p99"].get<double>() < report_json(whole)["max_itl_s"]["p99"].get<double>());
}

TEST_CASE("static_batching_holds_every_request_until_its_batch_s_longest_output_is_done", "[inference][scheduler]")
{
  // 8 requests at t = 0 with 64 prompt tokens and outputs 256, 16, 16, 16, 256, 16, 16,
  // 16; at most 4 sequences at once.
  // static: two batches of 1 prefill + 255 decodes = 512 iterations, and the short
  //   requests of a batch finish with its long one.
  // continuous: the prefill of 0-3 (1), decodes until 1-3 are done (15), prefill of 4-6
  //   (1), decodes until 5-6 are done (15), prefill of 7 (1); request 4 has 240 decodes
  //   left: 1 + 15 + 1 + 15 + 1 + 240 = 273 iterations (prefills alone, chunked_prefill off).
  // continuous with chunked prefill (vLLM's default): a prefill shares its iteration with
  //   the running decodes, so request 4 starts in iteration 17, beside request 0's 17th
  //   token, and ends 255 decodes later: 17 + 255 = 272 iterations.
  std::string path = trace("static_vs_continuous.csv",
                           {"0,64,256", "0,64,16", "0,64,16", "0,64,16", "0,64,256", "0,64,16", "0,64,16", "0,64,16"});
  auto run         = [&](const std::string& scheduler, bool chunked) {
    return simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: llama-2-7b}\n"
                                         "inference: {trace: " +
                                 path + ", max_num_seqs: 4, scheduler: " + scheduler +
                                 ", chunked_prefill: " + (chunked ? "true" : "false") + "}\n"),
                            true);
  };
  RunResult stat = run("static", false), cont = run("continuous", false);
  CHECK(report_json(stat)["iterations"] == 512);
  CHECK(report_json(cont)["iterations"] == 273);
  CHECK(report_json(run("continuous", true))["iterations"] == 272);
  CHECK(request(stat, 1).finish_s == request(stat, 0).finish_s);
  CHECK(request(stat, 7).finish_s == request(stat, 4).finish_s);
  CHECK(request(cont, 1).finish_s < 0.1 * request(cont, 0).finish_s);
  // Decode steps are weight-read-bound (batch 1-4 cost about the same), so the time
  // follows the iteration count: 273 / 512 = 0.53.
  CHECK(cont.makespan_s < 0.6 * stat.makespan_s);
  CHECK(report_json(cont)["output_tokens_per_s"].get<double>() >
        1.6 * report_json(stat)["output_tokens_per_s"].get<double>());
}

TEST_CASE("two_tp_ranks_streaming_offloaded_weights_share_their_pcie_switch_uplink", "[inference][offload]")
{
  // Llama-2-7B with every layer's weights in host memory, tp 2 on two A100s whose PCIe
  // switch uplinks are limited to 6 GB/s. Each decode step streams each rank's half of
  // the 32 layers: 32 x (4 h^2 + 3 h ffn) x 2 B / 2 = 32 x 202,375,168 x 2 / 2 B
  // = 6.476e9 B per rank, 1.079 s over its own 6 GB/s uplink; behind one shared switch
  // both halves cross one uplink, 2.159 s.
  auto run = [](int per_switch) {
    return simulate(spec("hardware:\n  node: {preset: dgx-a100, gpus: 2, sockets: 1, pcie_uplink_bw: 6 GB/s, "
                         "gpus_per_pcie_switch: " +
                         std::to_string(per_switch) +
                         "}\n"
                         "model: {preset: llama-2-7b}\n"
                         "inference: {batch: 1, prompt_len: 16, output_len: 5, tp: 2,"
                         " offload: {weights: cpu, weights_fraction: 1.0}}\n"),
                    true);
  };
  RunResult separate = run(1), shared = run(2);
  double per_rank      = 32 * 202375168.0 * 2 / 2;
  double tpot_separate = report_json(separate)["tpot_s"]["mean"].get<double>();
  double tpot_shared   = report_json(shared)["tpot_s"]["mean"].get<double>();
  CHECK(tpot_separate == Approx(per_rank / 6e9).epsilon(0.05));
  CHECK(tpot_shared == Approx(2 * per_rank / 6e9).epsilon(0.05));
}

TEST_CASE("a_serving_wait_shorter_than_the_engine_resolves_still_ends", "[inference][robustness]")
{
  // Found by the fuzz corpus (seed 1, case 14): the next request arrives 8.7e-19 s after
  // the clock as the replay sees it; SimGrid ends such a delay without moving its clock,
  // so the server asked to wait for it again, forever. Each wait now wakes the server at
  // the time it asked for. The run ends (in well under a second) with every request served.
  std::string spec = temp_path("tiny_wait.yaml");
  write_file(spec, "hardware: {node: dgx-h100, gpus_per_node: 4}\n"
                   "model: {preset: qwen3-30b-a3b, layers: 2}\n"
                   "inference: {tp: 1, ep: 4, weight_dtype: fp8, max_num_seqs: 4,\n"
                   "            poisson: {rate: 20, requests: 8, prompt_len: 64, output_len: 8}}\n");
  CliResult r = run_cli("run " + spec + " --json", "timeout 60");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["requests_completed"] == 8);
}

TEST_CASE("a_burst_of_sixty_thousand_requests_into_a_tiny_kv_cache_is_served_to_the_last", "[inference][robustness]")
{
  // Issue 37: GPT-2 on a desktop RTX 4070 with a Poisson rate of 1e9 and 60,000 one-token
  // requests livelocked on waits of ~8e-15 s. With the KV cache squeezed to a few blocks
  // (gpu_memory_utilization 0.96) every request waits, is scheduled and completes.
  std::string spec = temp_path("burst.yaml");
  write_file(spec, "hardware: {node: desktop-4070}\nmodel: {preset: gpt2}\n"
                   "inference: {max_num_seqs: 20000, gpu_memory_utilization: 0.96,\n"
                   "            poisson: {rate: 1e9, requests: 60000, seed: 1, prompt_len: 1, output_len: 1}}\n");
  CliResult r = run_cli("run " + spec + " --json", "timeout 120");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["requests_completed"] == 60000);
}

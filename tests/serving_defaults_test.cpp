// A serving spec that leaves the scheduler's limits out gets those of the engine's current
// release (issue 50): vLLM's EngineArgs.get_batch_defaults, which depend on the GPU and on
// whether it serves arrivals (the OpenAI API server) or one offline batch (the LLM class).
#include "sim/spec/ExperimentSpec.hpp"
#include "workloads/inference/InferenceSection.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

InferenceConfig inference_of(const std::string& hardware, const std::string& inference)
{
  ExperimentSpec s = parse_spec("hardware: " + hardware + "\nmodel: {preset: gpt2}\ninference: " + inference + "\n",
                                "serving.yaml", ".");
  return s.inference;
}

// The limits the spec's scheduler runs under.
BatchLimits limits_of(const std::string& hardware, const std::string& inference)
{
  return inference_of(hardware, inference).scheduler->limits();
}

const std::string arrivals = "{poisson: {rate: 5, requests: 10, prompt_len: 64, output_len: 8}}";
const std::string offline  = "{batch: 8, prompt_len: 64, output_len: 8}";

} // namespace

TEST_CASE("vllm_batch_defaults_follow_the_gpu_and_whether_it_serves_arrivals_or_one_batch", "[inference][defaults]")
{
  // vllm/engine/arg_utils.py: device memory >= 70 GiB and "a100" not in the name (H100,
  // H200, MI300X): 8,192 tokens (API server) or 16,384 (LLM class), 1,024 sequences; else
  // 2,048 or 8,192 tokens, 256 sequences. The V1 engine always chunks prefills.
  BatchLimits h100 = limits_of("{node: dgx-h100, gpus_per_node: 1}", arrivals);
  CHECK(h100.chunked_prefill);
  CHECK(h100.max_num_batched_tokens == 8192);
  CHECK(h100.max_num_seqs == 1024);
  CHECK(h100.whose == "vLLM 0.11.0's defaults for an API server on a GPU of 70 GiB or more");
  CHECK(limits_of("{node: dgx-h100, gpus_per_node: 1}", offline).max_num_batched_tokens == 16384);
  // An 80 GB A100 is excluded by name (vLLM PR #17885: the larger budget was slower there).
  BatchLimits a100 = limits_of("{node: dgx-a100, gpus_per_node: 1}", arrivals);
  CHECK(a100.max_num_batched_tokens == 2048);
  CHECK(a100.max_num_seqs == 256);
  CHECK(limits_of("{node: dgx-a100, gpus_per_node: 1}", offline).max_num_batched_tokens == 8192);
  // An L40S has 48 GB.
  CHECK(limits_of("{node: workstation-4x4090, gpus_per_node: 1, gpu: l40s}", arrivals).max_num_seqs == 256);
}

TEST_CASE("a_specs_own_batch_limits_replace_the_engines_and_hf_generate_has_no_chunks", "[inference][defaults]")
{
  BatchLimits own = limits_of("{node: dgx-h100, gpus_per_node: 1}",
                              "{poisson: {rate: 5, requests: 10, prompt_len: 64, output_len: 8}, "
                              "max_num_seqs: 64, max_num_batched_tokens: 512, chunked_prefill: true}");
  CHECK(own.max_num_seqs == 64);
  CHECK(own.max_num_batched_tokens == 512);
  CHECK(own.whose.empty()); // nothing defaulted: the summary names no engine's defaults
  // Without chunks a whole prompt must fit one iteration: at least max_model_len tokens.
  InferenceConfig whole = inference_of("{node: dgx-h100, gpus_per_node: 1}",
                                       "{poisson: {rate: 5, requests: 10, prompt_len: 64, output_len: 8}, "
                                       "chunked_prefill: false}");
  CHECK(whole.scheduler->limits().max_num_batched_tokens == std::max<int64_t>(8192, whole.max_model_len));
  BatchLimits hf = limits_of("{node: dgx-h100, gpus_per_node: 1}", "{engine: hf, " + offline.substr(1));
  CHECK_FALSE(hf.chunked_prefill);
  // The summary says what ran and whose defaults they were.
  std::string line = describe_inference(inference_of("{node: dgx-h100, gpus_per_node: 1}", arrivals));
  CHECK_THAT(line,
             Catch::Contains("max 1024 seqs, 8192 tokens per iteration, chunked prefill; vLLM 0.11.0's defaults for an "
                             "API server on a GPU of 70 GiB or more"));
}

// training.transformers_release: the logits' and loss's tensors of LlamaForCausalLM as each
// transformers release allocates them (calibration/research/transformers-loss-path.md, read
// at each release's tag), each freed when its last reader has run.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall::test;

namespace {

// Llama-3.2-1B's measured step shape (4 x 1,024 tokens, vocabulary 128,256, tied head) on
// one H200, without the DynamicCache (its fp32 k and v live until the forward returns).
std::string llama_1b(const std::string& release)
{
  return "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {hf_config: " +
         source_path("tests/data/hf_families/llama-3.2-1b/config.json") + "}\ntraining: {stack: pytorch, " +
         (release.empty() ? "" : "transformers_release: " + release + ", ") +
         "seq_len: 1024, micro_batch: 4, global_batch: 4, optimizer: adamw, pytorch: {use_cache: false}}\n";
}

} // namespace

TEST_CASE("each_transformers_release_peaks_where_its_loss_path_holds_the_most_logits", "[stack][pytorch][hf]")
{
  const double b = 4, T = 4096, V = 128256, h = 2048, N = T * V;
  const double newest = peak_without_context(run_json("tf_release_newest", llama_1b("")));
  // 4.49 on (the default): the loss pads and shifts the labels. Its peak is in the loss's
  // backward: log_softmax's fp32 output, nll's gradient and log_softmax's (12 N bytes)
  // beside the head's fp32 stream gradient (4 T h; lm_head's bf16 input gradient comes
  // with its backward, after them).
  CHECK(peak_without_context(run_json("tf_release_4_49", llama_1b("4.49.0"))) == Approx(newest).epsilon(1e-12));
  // 4.46-4.48: the output holds the bf16 logits (2 N) while ForCausalLMLoss holds their fp32
  // cast (4 N), its shifted contiguous copy and log_softmax's output (4 N' each, N' = (T - b)
  // V): 14 N - 8 b V at the forward's end, before any of the backward's.
  const double v446 = peak_without_context(run_json("tf_release_4_46", llama_1b("4.46.0")));
  CHECK(v446 - newest == Approx(2 * N - 8 * b * V - 4 * T * h).epsilon(1e-9));
  // 4.40-4.45: the model drops its bf16 logits once cast, so the peak is the backward's
  // again, over the shifted logits: 12 N' + 4 T h, 12 b V bytes under the newest's.
  const double v444 = peak_without_context(run_json("tf_release_4_44", llama_1b("4.44.2")));
  CHECK(newest - v444 == Approx(12 * b * V).epsilon(1e-9));
}

TEST_CASE("transformers_release_is_refused_where_it_means_nothing_or_is_not_modelled", "[stack][pytorch][errors]")
{
  using Catch::Matchers::Contains;
  // Before 4.49 GPT-2, GPT-NeoX and OPT shifted a bf16 copy in their own forwards: only
  // LlamaForCausalLM's paths are read. gpt-oss came with 4.55.
  auto family = [](const std::string& name, const std::string& release) {
    return "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {hf_config: " +
           source_path("tests/data/hf_families/" + name + "/config.json") +
           "}\ntraining: {stack: pytorch, transformers_release: " + release +
           ", seq_len: 512, micro_batch: 1, global_batch: 1}\n";
  };
  CHECK_THAT(refused("tf_release_gpt2", family("gpt2", "4.44.2")),
             Contains("training.transformers_release") && Contains("4.49.0"));
  CHECK_THAT(refused("tf_release_gpt_oss", family("gpt-oss-20b-2l", "4.54.0")),
             Contains("training.transformers_release") && Contains("4.55.0"));
  CHECK(run_json("tf_release_gpt2_new", family("gpt2", "4.49.0"))["fits"] == true);
  CHECK_THAT(refused("tf_release_bad", llama_1b("four")),
             Contains("training.transformers_release") && Contains("4.44.2"));
  CHECK_THAT(refused("tf_release_old", llama_1b("4.39.3")),
             Contains("training.transformers_release") && Contains("4.40.0"));
  CHECK_THAT(refused("tf_release_megatron", "hardware: {node: dgx-h100, gpus_per_node: 8}\nmodel: {preset: llama-2-7b}"
                                            "\ntraining: {stack: megatron, transformers_release: 4.44.2, seq_len: 512, "
                                            "global_batch: 8}\n"),
             Contains("training.transformers_release") && Contains("stack pytorch"));
}

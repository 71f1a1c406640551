// Bad inference input: one line naming the file (and the row of a trace) and what is
// allowed, exit code 2, no output file.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

using namespace memwall::test;

namespace {

// Runs a Llama-2-7B serving spec whose inference section is `inference`; a trace, when
// given, is written beside it as `name` + `ext`.
std::string refused_inference(const std::string& name, const std::string& inference, const std::string& trace = "",
                              const std::string& ext = ".csv")
{
  std::string spec = temp_path(name + ".yaml");
  std::string h5   = temp_path(name + ".h5");
  if (!trace.empty())
    write_file(temp_path(name + ext), trace);
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: llama-2-7b}\ninference: {" +
                       inference + "}\n");
  CliResult r = run_cli("run " + spec + " -o " + h5);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(h5));
  return r.err;
}

} // namespace

TEST_CASE("a_trace_row_with_a_word_for_a_token_count_is_refused_naming_file_and_row", "[errors][inference]")
{
  std::string err = refused_inference("trace_malformed", "trace: trace_malformed.csv",
                                      "arrival_time,prompt_tokens,output_tokens\n0.0,12,30\n0.5,many,30\n");
  CHECK_THAT(err, Catch::Contains("trace_malformed.csv:3:") && Catch::Contains("'many' is not an integer"));
}

TEST_CASE("a_trace_row_with_too_few_fields_is_refused", "[errors][inference]")
{
  std::string err = refused_inference("trace_short", "trace: trace_short.csv",
                                      "arrival_time,prompt_tokens,output_tokens\n0.0,12,30\n0.5,40\n");
  CHECK_THAT(err, Catch::Contains("trace_short.csv:3:") && Catch::Contains("expected 3 fields, found 2"));
}

TEST_CASE("a_negative_length_in_a_jsonl_trace_is_refused", "[errors][inference]")
{
  std::string err = refused_inference("trace_negative", "trace: trace_negative.jsonl",
                                      "{\"arrival_time\": 0, \"prompt_tokens\": 10, \"output_tokens\": 5}\n"
                                      "{\"arrival_time\": 1, \"prompt_tokens\": 10, \"output_tokens\": -5}\n",
                                      ".jsonl");
  CHECK_THAT(err, Catch::Contains("trace_negative.jsonl:2:") && Catch::Contains("negative"));
}

TEST_CASE("a_trace_whose_every_request_is_longer_than_the_context_is_refused", "[errors][inference]")
{
  // Llama-2-7B's context is 4096 tokens. One over-long request among others is refused
  // on arrival and counted (serving_rejections_test.cpp); a trace of nothing else has
  // nothing to serve.
  std::string err = refused_inference("trace_long", "trace: trace_long.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:50.0000000,5000,10\n");
  CHECK_THAT(err, Catch::Contains("inference.trace") && Catch::Contains("every one of the 1 requests") &&
                      Catch::Contains("context of 4096"));
}

TEST_CASE("a_fixed_batch_longer_than_the_context_is_refused", "[errors][inference]")
{
  std::string err = refused_inference("batch_long", "batch: 2, prompt_len: 4000, output_len: 200");
  CHECK_THAT(err, Catch::Contains("inference.prompt_len") && Catch::Contains("exceed the context of 4096"));
}

TEST_CASE("a_replica_on_fewer_or_more_gpus_than_the_hardware_gives_is_refused", "[errors][inference]")
{
  // One replica runs on tp GPUs (ep when experts spread over attention data-parallel
  // groups): the hardware section gives exactly those. tp 2 on one GPU, and a dense tp 2
  // on 4 GPUs, which ran unrefused while the check was skipped whenever ep (1) was no
  // multiple of tp.
  CHECK_THAT(refused_inference("tp_over", "tp: 2, batch: 1"),
             Catch::Contains("inference.tp") && Catch::Contains("tp = 2 GPUs but the hardware has 1"));
  CHECK_THAT(refused("tp_under", "hardware: {node: dgx-a100, gpus_per_node: 4}\nmodel: {preset: gpt2}\n"
                                 "inference: {tp: 2, batch: 1, prompt_len: 16, output_len: 2}\n"),
             Catch::Contains("inference.tp") && Catch::Contains("tp = 2 GPUs but the hardware has 4"));
}

TEST_CASE("a_kv_block_size_of_zero_is_refused", "[errors][inference]")
{
  std::string err = refused_inference("block_zero", "batch: 1, block_size: 0");
  CHECK_THAT(err, Catch::Contains("inference.block_size") && Catch::Contains("at least 1"));
}

TEST_CASE("a_missing_trace_file_is_refused", "[errors][inference]")
{
  std::string err = refused_inference("trace_missing", "trace: no_such_trace.csv");
  CHECK_THAT(err, Catch::Contains("no_such_trace.csv: trace file not found"));
}

TEST_CASE("a_spec_with_both_training_and_inference_is_refused", "[errors][inference]")
{
  std::string spec = temp_path("both_sections.yaml");
  write_file(spec, "hardware: {node: dgx-a100}\nmodel: {preset: gpt2}\ntraining: {}\ninference: {}\n");
  CliResult r = run_cli("run " + spec);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("one of training or inference"));
}

TEST_CASE("a_trace_token_count_past_the_limit_is_refused_not_an_endless_run", "[errors][inference][robustness]")
{
  // 9223372036854775807 made prompt + output overflow to a negative context, which
  // passed the max_model_len check; the run never ended.
  std::string err =
      refused_inference("trace_huge_tokens", "trace: trace_huge_tokens.csv",
                        "arrival_time,prompt_tokens,output_tokens\n0.0,12,30\n0.5,9223372036854775807,30\n");
  CHECK_THAT(err,
             Catch::Contains("trace_huge_tokens.csv:3:") && Catch::Contains("exceeds the limit of 100000000 tokens"));
}

TEST_CASE("a_trace_arrival_beyond_any_calendar_is_refused", "[errors][inference][robustness]")
{
  // Arrivals at +-1.7e308 s overflowed the replay's clock.
  std::string err = refused_inference("trace_huge_time", "trace: trace_huge_time.csv",
                                      "arrival_time,prompt_tokens,output_tokens\n-1.7e308,12,30\n1.7e308,12,30\n");
  CHECK_THAT(err, Catch::Contains("trace_huge_time.csv:2:") && Catch::Contains("neither seconds"));
}

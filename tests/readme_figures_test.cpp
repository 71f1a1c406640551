// Figures the README and the examples' comments quote from a run of an example are what
// the program prints now: each claim below reruns its command (or reads the example's
// golden output, which golden_test.cpp holds to the program) and looks for the figure,
// formatted as the text writes it, in the text. A change that moves a quoted figure
// fails here until the text is updated with it.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Claim {
  const char* text_file; // where the figure is quoted, from the repository root
  const char* example;   // examples/NAME.yaml
  const char* sets;      // --set arguments of the quoted run ("" for the example as it is)
  const char* pointer;   // the figure in the run's --json
  double scale;          // from the JSON's SI unit to the text's (1e3: s to ms)
  int decimals;
  const char* phrase; // as the text writes it, {} for the figure
};

const std::vector<Claim> claims = {
    {"README.md", "mixtral-8x7b-ep8-dgx-h100", "", "/step_time_s", 1, 1, "ep 8: {} s per 131k-token step"},
    {"README.md", "mixtral-8x7b-ep8-dgx-h100", "", "/mfu", 100, 1, "step, MFU {} %"},
    {"README.md", "mixtral-8x7b-ep8-dgx-h100", "--set training.tp=2 --set training.sp=true --set training.etp=1",
     "/step_time_s", 1, 2, "with tp 2 takes {} s per step"},
    {"README.md", "mixtral-8x7b-ep8-dgx-h100", "--set training.tp=2 --set training.sp=true --set training.ep=4",
     "/step_time_s", 1, 2, "against {} s with `ep: 4`"},
    {"README.md", "qwen3-30b-a3b-serving-1xh100", "", "/tpot_s/p50", 1e3, 1, "{} ms per output token (median)"},
    {"README.md", "deepseek-v3-serving-ep32-4xh800", "", "/output_tokens_per_s", 1e-3, 1, "GPUs: {}k output tokens/s"},
    {"README.md", "deepseek-v3-serving-ep32-4xh800", "--set inference.tp=8", "/output_tokens_per_s", 1e-3, 1,
     "against {}k with tp 8 x 4 groups"},
    {"README.md", "deepseek-v3-serving-ep32-4xh800", "", "/tpot_s/mean", 1e3, 0, "at {} ms per token"},
    {"README.md", "deepseek-v3-serving-ep32-4xh800", "--set inference.tp=8", "/tpot_s/mean", 1e3, 0,
     "per token against {} |"},
    {"README.md", "llama3-70b-128k-cp8-16xdgx-h100", "", "/step_time_s", 1, 1, "cp 8 x pp 2: {} s per step"},
    {"README.md", "llama2-7b-dp64-8xdgx-h100",
     "--set 'hardware.network.tiers=[{name: pod, nodes: 4, oversubscription: 4}]'", "/step_time_s", 1, 3,
     "at 1:4 takes\n{} s per step"},
    {"README.md", "llama2-7b-dp64-8xdgx-h100", "", "/step_time_s", 1, 3, "at 1:4 takes\n{} s per step"},
    {"README.md", "llama2-7b-dp64-8xdgx-h100",
     "--set 'hardware.network.tiers=[{name: pod, nodes: 4, oversubscription: 8}]'", "/step_time_s", 1, 3,
     "the step takes {} s, as much"},
    {"README.md", "llama2-7b-dp64-8xdgx-h100", "--set hardware.network.oversubscription=2", "/step_time_s", 1, 3,
     "the step takes {} s, as much"},
    {"examples/deepseek-v3-serving-ep32-4xh800.yaml", "deepseek-v3-serving-ep32-4xh800", "", "/output_tokens_per_s",
     1e-3, 1, "tp 1  x 32 groups: {}k output tokens/s"},
    {"examples/deepseek-v3-serving-ep32-4xh800.yaml", "deepseek-v3-serving-ep32-4xh800", "", "/ttft_s/mean", 1, 2,
     "per output token, TTFT {} s"},
    {"examples/deepseek-v3-serving-ep32-4xh800.yaml", "deepseek-v3-serving-ep32-4xh800", "--set inference.tp=4",
     "/output_tokens_per_s", 1e-3, 1, "tp 4  x  8 groups: {}k tokens/s"},
    {"examples/deepseek-v3-serving-ep32-4xh800.yaml", "deepseek-v3-serving-ep32-4xh800", "--set inference.tp=4",
     "/ttft_s/mean", 1, 1, "47 ms, TTFT {} s (fewer"},
    {"examples/deepseek-v3-serving-ep32-4xh800.yaml", "deepseek-v3-serving-ep32-4xh800", "--set inference.tp=8",
     "/output_tokens_per_s", 1e-3, 1, "tp 8  x  4 groups: {}k tokens/s"},
};

nlohmann::json run_of(const Claim& c)
{
  const std::string spec = memwall::test::source_path(std::string("examples/") + c.example + ".yaml");
  if (std::string(c.sets).empty())
    return nlohmann::json::parse(
        memwall::test::read_file(memwall::test::source_path(std::string("tests/golden/") + c.example + ".json")));
  const memwall::test::CliResult r = memwall::test::run_cli("run " + spec + " --json " + c.sets);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

} // namespace

TEST_CASE("every_figure_the_readme_and_the_examples_quote_from_a_run_is_what_the_run_prints", "[outputs][docs]")
{
  for (const Claim& c : claims) {
    const nlohmann::json run = run_of(c);
    const nlohmann::json::json_pointer at(c.pointer);
    REQUIRE(run.contains(at));
    char figure[64];
    std::snprintf(figure, sizeof figure, "%.*f", c.decimals, run.at(at).get<double>() * c.scale);
    std::string phrase = c.phrase;
    phrase.replace(phrase.find("{}"), 2, figure);
    INFO(c.text_file << " on " << c.example << " " << c.sets << " " << c.pointer << ": looking for \"" << phrase
                     << "\"");
    CHECK(memwall::test::read_file(memwall::test::source_path(c.text_file)).find(phrase) != std::string::npos);
  }
}

// YAML and JSON from a hostile user (issue 37, findings 3 and 4): alias loops and
// alias bombs, a mapping of 200,000 keys, a second document, JSON nested 100,000 levels
// deep, a key given twice. Each overflowed the stack, ran for minutes or was silently
// half read; each is now one line and exit 2.
#include "hwmodels/profile/LatencyBandwidthCurve.hpp"
#include "tests/DamagedFiles.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace memwall::test;

namespace {

// The small training spec with `more` appended, written to NAME.yaml.
std::string spec_with(const std::string& name, const std::string& more)
{
  std::string path = temp_path(name + ".yaml");
  write_file(path, small_training_spec + more);
  return path;
}

// Nine levels of ten aliases each: 623 bytes that expand to 10^9 scalars.
std::string alias_bomb()
{
  std::string y = "bomb0: &b0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*b" + std::to_string(i - 1);
    y += "bomb" + std::to_string(i) + ": &b" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k)
      y += (k ? ", " : "") + prev;
    y += "]\n";
  }
  return y;
}

std::string nested_json(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

} // namespace

TEST_CASE("a_yaml_alias_to_the_node_that_holds_it_is_refused_not_a_stack_overflow", "[robustness][yaml]")
{
  // refuse_duplicate_keys followed the loop until the stack overflowed (exit 139) in a
  // spec, a sweep, a profile and a --set value alike.
  std::string loop = spec_with("alias_loop", "extra: &a [*a]\n");
  refused_file("run " + loop, "alias_loop.yaml:9: YAML alias *a refers to a node that contains it");
  std::string merge = temp_path("alias_merge.yaml");
  write_file(merge, "a: &a {<<: *a}\n");
  refused_file("run " + merge, "alias_merge.yaml:1: YAML alias *a refers to a node that contains it");
  refused_file("run " + spec_with("alias_set", "") + " --set 'training.micro_batch=&a [*a]'",
               "YAML alias *a refers to a node that contains it");
  std::string sweep = temp_path("alias_sweep.yaml");
  write_file(sweep, sweep_base + "grid:\n  training.micro_batch: &m [1, *m]\n");
  refused_file("sweep " + sweep + " -o " + temp_path("alias_sweep.h5"), "YAML alias *m refers to a node");
  std::string profile = temp_path("alias_profile.yaml");
  write_file(profile, "gpu: h100-sxm-80gb\nsource: test\nelementwise: &e {x: *e}\n");
  refused_file("run " + spec_with("alias_profile_spec", "") + " --set hardware.profile=" + profile,
               "YAML alias *e refers to a node that contains it");
}

TEST_CASE("aliases_that_expand_past_a_million_nodes_are_refused_before_they_are_walked", "[robustness][yaml]")
{
  // 623 bytes of aliases took 45 s and grew tenfold a level.
  refused_file("run " + spec_with("alias_bomb", alias_bomb()), "YAML aliases expand the document past 1000000 nodes");
  // A few aliases are fine: an anchor reused as a value is an ordinary YAML idiom.
  std::string reuse = temp_path("alias_reuse.yaml");
  write_file(reuse, "hardware: {node: desktop-4070}\ntraining: {seq_len: &n 256, global_batch: 2, micro_batch: 1}\n"
                    "model: {preset: gpt2, max_seq_len: *n}\n");
  CliResult r = run_cli("run " + reuse);
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("a_second_yaml_document_is_refused_not_ignored", "[robustness][yaml]")
{
  // yaml-cpp's Load reads the first document: a spec continued after '---' ran without
  // the rest, silently.
  std::string two = spec_with("two_documents", "---\ntraining: {micro_batch: 2}\n");
  refused_file("run " + two, "two_documents.yaml:9: a second YAML document (after '---')");
}

TEST_CASE("a_mapping_of_many_keys_is_checked_for_duplicates_in_linear_time", "[robustness][yaml]")
{
  // 200,000 keys in one mapping took 30 s (each key was compared with every earlier
  // one); the duplicate is still found, by its line.
  std::string keys = "extra:\n";
  for (int i = 0; i < 200000; ++i)
    keys += "  k" + std::to_string(i) + ": 1\n";
  keys += "  k7: 2\n";
  refused_file("run " + spec_with("many_keys", keys),
               "many_keys.yaml:200010: duplicate key 'k7' (first given on line 17)");
}

TEST_CASE("an_hf_config_nested_deeper_than_any_config_is_refused_not_a_stack_overflow", "[robustness][hf]")
{
  // nlohmann's parser is iterative, but copying or dumping the value recursed: 100,000
  // levels in a key memwall never reads (or under a Gemma 3's text_config) crashed.
  std::string dir = temp_path("deep-config");
  std::filesystem::create_directories(dir);
  write_file(dir + "/config.json", R"({"model_type": "llama", "unused": )" + nested_json(100000) + "}");
  refused_file("run " + spec_with("deep_hf", "") + " --set model.preset=null --set model.hf_config=" + dir +
                   "/config.json",
               "not valid JSON (nested deeper than 256 levels)");
}

TEST_CASE("a_json_key_given_twice_is_refused_not_last_wins", "[robustness][hf]")
{
  std::string dir = temp_path("twice-config");
  std::filesystem::create_directories(dir);
  write_file(dir + "/config.json", R"({"model_type": "llama", "num_hidden_layers": 2, "num_hidden_layers": 80})");
  refused_file("run " + spec_with("twice_hf", "") + " --set model.preset=null --set model.hf_config=" + dir +
                   "/config.json",
               "key 'num_hidden_layers' given twice in one object");
}

TEST_CASE("a_request_trace_line_nested_too_deep_is_refused_naming_its_row", "[robustness][inference]")
{
  std::string trace = temp_path("deep_trace.jsonl");
  write_file(trace, "{\"arrival_time\": 0, \"prompt_tokens\": 10, \"output_tokens\": 5}\n"
                    "{\"arrival_time\": 1, \"prompt_tokens\": 10, \"output_tokens\": 5, \"meta\": " +
                        nested_json(100000) + "}\n");
  std::string spec = temp_path("deep_trace.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\ninference: {trace: " + trace +
                       "}\n");
  refused_file("run " + spec, "deep_trace.jsonl:2: not a JSON object (nested deeper than 256 levels)");
}

TEST_CASE("a_curve_of_thousands_of_regimes_finds_each_sizes_regime", "[robustness][profile]")
{
  // The lookup was a scan of every regime per transfer: a profile of 30,000 regimes
  // took 29 s. It is a binary search now; each size must still find the first regime
  // whose upto_bytes holds it (by hand: regime k covers (k, k + 1] KiB).
  memwall::LatencyBandwidthCurve c;
  for (int k = 0; k < 30000; ++k)
    c.regimes.push_back({1024.0 * (k + 1), 1e-6 * k, 1e9});
  c.regimes.back().upto_bytes = INFINITY;
  CHECK(c.latency(1.0) == 0);
  CHECK(c.latency(1024.0) == 0);
  CHECK(c.latency(1025.0) == Approx(1e-6));
  CHECK(c.latency(1024.0 * 12345 + 1) == Approx(12345e-6));
  CHECK(c.latency(1e30) == Approx(29999e-6));
}

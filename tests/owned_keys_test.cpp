// Implementations own their keys (DESIGN.md §4): the registry makes an implementation
// through the reader of its section, `memwall list params` names each key's owner, and a
// key of an implementation the spec did not pick is refused with its owner named.
#include "sim/spec/ExperimentSpec.hpp"
#include "sim/spec/SpecParams.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

using namespace memwall;
using namespace memwall::test;

namespace {

// `memwall list params`: key -> its line.
std::map<std::string, std::string> listed_lines()
{
  CliResult r = run_cli("list params");
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.starts_with("key "));
  std::map<std::string, std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    out[line.substr(0, line.find(' '))] = line;
  return out;
}

// The owners the list gives each key (what it prints in its owner column).
std::map<std::string, std::string> listed_owners()
{
  std::map<std::string, std::string> out;
  for (const ParamDoc& d : spec_param_docs())
    out[d.path] = d.owner;
  return out;
}

// Every key (not a mapping holding keys) the implementation reads, made with its
// defaults: the docs its reading recorded under its owner.
template <typename Factory>
std::set<std::string> keys_read(const Registry<Factory>& registry, const std::string& name)
{
  std::vector<ParamDoc> saved = param_docs();
  param_docs().clear();
  registry.describe(name);
  std::set<std::string> out;
  for (const ParamDoc& d : param_docs())
    if (d.type != "mapping")
      out.insert(d.path);
  param_docs() = std::move(saved);
  return out;
}

template <typename Factory>
void check_listed(const Registry<Factory>& registry, const std::map<std::string, std::string>& listed, size_t& count)
{
  static const std::map<std::string, std::string> lines = listed_lines();
  for (const std::string& name : registry.names())
    for (const std::string& key : keys_read(registry, name)) {
      INFO(registry.owner(name) << " reads " << key);
      REQUIRE(listed.count(key) == 1);
      CHECK_THAT(", " + listed.at(key) + ",", Catch::Contains(", " + registry.owner(name) + ","));
      REQUIRE(lines.count(key) == 1);
      CHECK_THAT(lines.at(key), Catch::Contains(listed.at(key)));
      ++count;
    }
}

} // namespace

TEST_CASE("memwall_list_params_lists_every_key_of_every_implementation_with_its_owner", "[params]")
{
  const auto listed = listed_owners();
  size_t count      = 0;
  check_listed(training_stack_registry(), listed, count);
  check_listed(pipeline_schedule_registry(), listed, count);
  check_listed(token_dispatcher_registry(), listed, count);
  check_listed(inference_engine_registry(), listed, count);
  check_listed(batch_scheduler_registry(), listed, count);
  check_listed(kv_manager_registry(), listed, count);
  // DeepSpeed's ten knobs, the paged KV manager's four, and the three batch limits each
  // scheduler reads (static and continuous): at least 10 + 4 + 2 x 3.
  CHECK(count >= 20);
  CHECK_THAT(listed.at("training.deepspeed.overlap_comm"), Catch::Contains("training stack deepspeed"));
  CHECK(listed.at("inference.block_size") == "KV manager paged");
  CHECK_THAT(listed.at("inference.swap_space"),
             Catch::Contains("KV manager contiguous") && Catch::Contains("KV manager paged"));
  CHECK_THAT(listed.at("inference.max_num_seqs"),
             Catch::Contains("scheduler continuous") && Catch::Contains("scheduler static"));
  // A key of the section itself has no owner ("-" in the list).
  CHECK(listed.at("training.tp").empty());
}

TEST_CASE("every_key_an_example_reads_is_a_listed_key", "[params]")
{
  // The examples pick stacks, engines, schedulers and KV managers the default specs do
  // not: every key their reading touched is in the list (no key read only by chance).
  std::set<std::string> listed;
  for (const ParamDoc& d : spec_param_docs())
    listed.insert(d.path);
  size_t examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    if (entry.path().extension() != ".yaml")
      continue;
    std::vector<ParamDoc> saved = param_docs();
    param_docs().clear();
    parse_spec(read_file(entry.path().string()), entry.path().string(), source_path("examples"));
    for (const ParamDoc& d : param_docs()) {
      const std::string section = d.path.substr(0, d.path.find('.'));
      if (!std::set<std::string>{"hardware", "model", "training", "inference", "memory", "workload"}.count(section))
        continue; // the catalog's presets, read on the way
      INFO(entry.path().filename().string() << " reads " << d.path);
      CHECK(listed.count(d.path) == 1);
    }
    param_docs() = std::move(saved);
    ++examples;
  }
  CHECK(examples >= 20);
}

TEST_CASE("a_key_of_an_implementation_the_spec_did_not_pick_is_refused_naming_its_owner", "[params]")
{
  // DeepSpeed's section under plain PyTorch would configure nothing: one line, exit 2.
  CHECK_THAT(refused("ds_under_pytorch", "hardware: {node: dgx-a100}\nmodel: {preset: gpt2}\n"
                                         "training: {stack: pytorch, deepspeed: {overlap_comm: true}}\n"),
             Catch::Contains("ds_under_pytorch.yaml:3: training.deepspeed: read by training stack deepspeed; this "
                             "spec runs training stack pytorch (training.stack)"));
  // A block size means nothing to a contiguous reservation.
  CHECK_THAT(refused("block_of_contiguous", "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                                            "inference: {kv_manager: contiguous, block_size: 32}\n"),
             Catch::Contains("inference.block_size: read by KV manager paged; this spec runs KV manager contiguous"));
  // Given as null, another's key is absent, as any key is: nothing to refuse.
  CHECK_NOTHROW(parse_spec(
      "hardware: {node: dgx-a100}\nmodel: {preset: gpt2}\ntraining: {stack: pytorch, deepspeed: }\n", "null.yaml", ""));
  // Keys every KV manager reads (the base's) are a contiguous reservation's too.
  ExperimentSpec swapping = parse_spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                                       "inference: {kv_manager: contiguous, preemption: swap, swap_space: 2 GiB}\n",
                                       "swap.yaml", "");
  CHECK(swapping.inference.kv_manager->swaps());
  CHECK(swapping.inference.kv_manager->swap_space_bytes() == 2.0 * (1ull << 30));
  // A typo stays a typo: unknown everywhere, with the keys allowed here.
  CHECK_THAT(refused("typo", "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                             "inference: {block_sise: 32}\n"),
             Catch::Contains("inference.block_sise: unknown key (did you mean block_size?)"));
}

TEST_CASE("an_implementation_reads_its_keys_through_the_reader_the_registry_hands_it", "[params]")
{
  // The deepspeed stack made from a section that sets its modules drives transformers'
  // modules: Llama 3 8B's layer lists its nine nn.Parameters (Megatron's GPT would fuse QKV).
  ParamReader training(YAML::Load("deepspeed: {modules: transformers}"), "test", "training");
  auto stack = training_stack_registry().make("deepspeed", training);
  CHECK(stack->name() == "deepspeed");
  TrainingConfig cfg;
  cfg.seq_len = 1024;
  CHECK(stack->layer(model_preset("llama-3-8b"), step_shape(cfg), 0).tensors.size() == 9);
  // What it read counts as read for the section: nothing left over for finish().
  CHECK_NOTHROW(training.finish());
  // Its defaults without a section: Megatron-DeepSpeed's GPT layer, fused: input norm,
  // QKV, output, post-attention norm, gate and up, down (no biases, RMSNorm's weight only).
  CHECK(default_training_stack("deepspeed")->layer(model_preset("llama-3-8b"), step_shape(cfg), 0).tensors.size() == 6);
}

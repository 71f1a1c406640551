// Megatron-Core's --recompute-method and --recompute-num-layers under full recompute
// (transformer_block.py, _checkpointed_forward): block checkpoints the first N layers of
// each model chunk and keeps every activation of the rest.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace memwall;
using namespace memwall::test;

namespace {

std::string spec(int layers, const std::string& extra)
{
  return "hardware: {node: dgx-h100, gpus_per_node: 2}\n"
         "model: {layers: " +
         std::to_string(layers) +
         ", hidden: 1024, heads: 16, vocab: 32768, max_seq_len: 2048}\n"
         "training: {stack: megatron, seq_len: 2048, global_batch: 4, micro_batch: 1, recompute: full" +
         extra + "}\n";
}

// The layers whose backward reruns their forward.
std::set<std::string> recomputed(const RunResult& r)
{
  std::set<std::string> layers;
  for (const OpRecord& o : r.ops)
    if (o.name.find(".recompute.") != std::string::npos)
      layers.insert(o.name.substr(0, o.name.find('.')));
  return layers;
}

double activations(const RunResult& r)
{
  return r.pools.at(0).max_by_category[static_cast<size_t>(MemCategory::activations)];
}

RunResult run(const std::string& yaml) { return simulate(parse_spec(yaml, "test.yaml", ""), true); }

} // namespace

TEST_CASE("megatrons_block_method_recomputes_the_first_n_layers_of_each_model_chunk", "[recompute]")
{
  // pp 2 x vp 2 over 8 layers: chunks L0-L1, L2-L3 (stage 1), L4-L5, L6-L7 (stage 1).
  RunResult one = run(spec(8, ", pp: 2, virtual_stages: 2, pipeline_schedule: interleaved, "
                              "recompute_method: block, recompute_num_layers: 1"));
  CHECK(recomputed(one) == std::set<std::string>{"L0", "L2", "L4", "L6"});
  RunResult three = run(spec(4, ", recompute_method: block, recompute_num_layers: 3"));
  CHECK(recomputed(three) == std::set<std::string>{"L0", "L1", "L2"});
  // All of a chunk's layers: every layer recomputes, as the uniform method's one a group.
  RunResult all     = run(spec(4, ", recompute_method: block, recompute_num_layers: 4"));
  RunResult uniform = run(spec(4, ""));
  CHECK(recomputed(all) == recomputed(uniform));
  CHECK(activations(all) == activations(uniform));
  // Fewer layers recomputed, more activations kept.
  CHECK(activations(three) > activations(all));
  CHECK(activations(run(spec(4, ", recompute_method: block, recompute_num_layers: 1"))) > activations(three));
}

TEST_CASE("recompute_methods_memwall_does_not_model_or_that_do_not_apply_are_refused", "[recompute][errors]")
{
  CHECK_THAT(refused("uniform_groups", spec(4, ", recompute_num_layers: 2")),
             Catch::Contains("training.recompute_num_layers") && Catch::Contains("recompute_method: block"));
  std::string selective = spec(4, ", recompute_method: block");
  selective.replace(selective.find("recompute: full"), 15, "recompute: selective");
  CHECK_THAT(refused("method_selective", selective),
             Catch::Contains("training.recompute_method") && Catch::Contains("recompute: full only"));
}

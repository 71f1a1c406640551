// Megatron-Core's account_for_embedding_in_pipeline_split and
// account_for_loss_in_pipeline_split (transformer_block.py, get_num_layers_to_build):
// the embedding and the loss count as a layer each in the even split over pp x vp
// virtual stages, so the first and the last virtual stage build one layer fewer.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace memwall;
using namespace memwall::test;

TEST_CASE("the_embedding_and_the_loss_counted_in_the_split_leave_the_end_stages_a_layer_short", "[pipeline]")
{
  // Llama 3 405B as Meta laid it out (arXiv:2407.21783 section 3.3.2): 126 layers in 16 x 8
  // chunks, one layer removed from the first and from the last: (126 + 2) / 128 = 1
  // layer a virtual stage, none in the first (the embedding) and the last (the head).
  TrainingConfig t;
  t.pp                 = 16;
  t.virtual_stages     = 8;
  t.embedding_in_split = t.loss_in_split = true;
  std::vector<int64_t> split             = t.stage_layers(126);
  REQUIRE(split.size() == 128);
  CHECK(split.front() == 0);
  CHECK(split.back() == 0);
  for (size_t s = 1; s + 1 < split.size(); ++s)
    CHECK(split[s] == 1);
  t.loss_in_split = false; // 127 over 128 virtual stages does not split
  CHECK(t.stage_layers(126).empty());
  // Six layers, pp 2 x vp 2, both counted: 8 / 4 = 2 a virtual stage; virtual stage 0
  // (stage 0, chunk 0) holds the embedding and L0, 1 (stage 1) L1-L2, 2 (stage 0, chunk 1)
  // L3-L4, 3 (stage 1, chunk 1) L5 and the head.
  OpDag dag                      = spec_workload("hardware: {node: dgx-h100, gpus_per_node: 2}\n"
                                                                      "model: {layers: 6, hidden: 512, heads: 8, vocab: 1024, max_seq_len: 512}\n"
                                                                      "training: {seq_len: 512, pp: 2, virtual_stages: 2, pipeline_schedule: interleaved, "
                                                                      "global_batch: 4, account_for_embedding_in_pipeline_split: true, "
                                                                      "account_for_loss_in_pipeline_split: true}\n");
  std::map<std::string, int> gpu = layer_gpus(dag);
  CHECK(gpu["L0"] == 0);
  CHECK(gpu["L1"] == 1);
  CHECK(gpu["L2"] == 1);
  CHECK(gpu["L3"] == 0);
  CHECK(gpu["L4"] == 0);
  CHECK(gpu["L5"] == 1);
}

TEST_CASE("a_counted_split_that_does_not_divide_or_meets_an_uneven_one_is_refused", "[pipeline][errors]")
{
  const std::string base = "hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {preset: gpt2}\n"
                           "training: {seq_len: 128, pp: 4, global_batch: 4, ";
  // GPT-2's 12 layers + 1 over 4 stages.
  CHECK_THAT(refused("counted_split", base + "account_for_embedding_in_pipeline_split: true}\n"),
             Catch::Contains("training.account_for_embedding_in_pipeline_split") &&
                 Catch::Contains("do not split evenly over pp x virtual_stages = 4"));
  // transformer_config.py: not with num_layers_in_first/last_pipeline_stage.
  CHECK_THAT(refused("counted_uneven", base + "account_for_loss_in_pipeline_split: true, last_stage_layers: 2}\n"),
             Catch::Contains("training.account_for_loss_in_pipeline_split") &&
                 Catch::Contains("first_stage_layers or last_stage_layers"));
}

TEST_CASE("the_fsdp_stack_splits_uneven_layers_as_torchtitans_generate_split_points", "[pipeline][fsdp]")
{
  // torchtitan's pipeline.py (2024), Llama 3.1 405B's 126 layers: 1F1B over 8 stages,
  // base 126 / 8 = 15, remainder 6 to stages 1-6: 15, 16 x 6, 15; Interleaved1F1B's two
  // stages a rank over 16: base 7, remainder 14 to stages 1-14: 7, 8 x 14, 7.
  TrainingConfig t;
  t.pp               = 8;
  t.torchtitan_split = true;
  CHECK(t.stage_layers(126) == std::vector<int64_t>{15, 16, 16, 16, 16, 16, 16, 15});
  t.virtual_stages                 = 2;
  const std::vector<int64_t> split = t.stage_layers(126);
  REQUIRE(split.size() == 16);
  CHECK(split.front() == 7);
  CHECK(split.back() == 7);
  for (size_t s = 1; s + 1 < split.size(); ++s)
    CHECK(split[s] == 8);
  // A remainder beyond the middle stages goes to the last: 10 layers over 4, base 2,
  // remainder 2 to stages 1 and 2: 2, 3, 3, 2; 11 over 4: 2, 3, 3, 3.
  t.virtual_stages = 1, t.pp = 4;
  CHECK(t.stage_layers(10) == std::vector<int64_t>{2, 3, 3, 2});
  CHECK(t.stage_layers(11) == std::vector<int64_t>{2, 3, 3, 3});
  // Divisible layers split evenly, as before; more stages than layers is refused.
  CHECK(t.stage_layers(32) == std::vector<int64_t>{8, 8, 8, 8});
  CHECK(t.stage_layers(3).empty());
  CHECK_THAT(refused("titan_split", "hardware: {node: dgx-h100}\nmodel: {layers: 4, hidden: 512, heads: 8, vocab: "
                                    "1024, max_seq_len: 512}\ntraining: {stack: fsdp, seq_len: 512, pp: 4, "
                                    "virtual_stages: 2, pipeline_schedule: interleaved, global_batch: 16}\n"),
             Catch::Contains("training.virtual_stages") && Catch::Contains("exceed"));
}

// Llama 3 405B on 8,192 and 16,384 H100s (The Llama 3 Herd of Models, Table 4), as
// calibration/validation/llama3-405b-*xh100.yaml lay it out: the paper's pipeline (126
// layers in 16 x 8 one-layer chunks, the first chunk the embedding alone and the last the
// output and loss alone) and what moves its throughput from 8K to 16K GPUs.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace memwall;
using namespace memwall::test;

namespace {

ExperimentSpec row(int gpus)
{
  return load_spec(source_path("calibration/validation/llama3-405b-" + std::to_string(gpus) + "xh100.yaml"));
}

// The node whose forward runs each block (tp 8 fills a node; a stage's dp ranks follow).
std::map<std::string, int> block_nodes(const OpDag& dag)
{
  std::map<std::string, int> node;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op           = dag.op(id);
    const std::string name = op.name.str();
    if (op.kind == OpKind::kernel && name.find(".fwd.") != std::string::npos)
      node.try_emplace(name.substr(0, name.find('.')), op.device.node);
  }
  return node;
}

} // namespace

TEST_CASE("llama3_405bs_first_and_last_chunks_hold_only_the_embedding_and_the_loss", "[validation][fsdp][pp]")
{
  // Section 3.3.2: "the first model chunk on the first stage has only the embedding, and
  // the last model chunk on the last stage has only output projection and loss". With
  // one layer a chunk, layer l sits in virtual stage l + 1, on stage (l + 1) mod 16; dp 64
  // puts stage p on nodes 64p ...
  auto at = block_nodes(build_workload(row(8192)));
  CHECK(at.at("embed") == 0);
  CHECK(at.at("L0") == 64);       // virtual stage 1: stage 1's first chunk
  CHECK(at.at("L14") == 15 * 64); // virtual stage 15
  CHECK(at.at("L15") == 0);       // virtual stage 16: stage 0's second chunk
  CHECK(at.at("L125") == 14 * 64);
  CHECK(at.at("head") == 15 * 64); // virtual stage 127
}

TEST_CASE("llama3_405b_on_16k_gpus_loses_about_what_table_4_lost_to_half_the_micro_batches", "[validation][fsdp][pp]")
{
  // Table 4: 430 TFLOP/s a GPU on 8,192 GPUs (32 micro-batches a pipeline), 400 on 16,384
  // (16): x0.930, "due to the lower batch size per DP group". The paper's bubble ratio
  // (PP - 1) / (V M) alone gives (1 + 15/256) / (1 + 15/128) = x0.948. The same work per
  // step, so the ratio of step times is the inverse ratio of rates per GPU.
  RunResult r8  = simulate(row(8192), true);
  RunResult r16 = simulate(row(16384), true);
  REQUIRE(r8.model_flops_per_step > 0);
  CHECK(r16.model_flops_per_step == Approx(r8.model_flops_per_step).epsilon(1e-9));
  double ratio = (r8.makespan_s * 8192) / (r16.makespan_s * 16384);
  INFO("16K / 8K rate per GPU: " << ratio);
  CHECK(ratio == Approx(400.0 / 430.0).margin(0.02));
}

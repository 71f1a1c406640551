// Context parallelism: each of cp ranks holds seq_len / cp tokens of every sequence;
// K and V go round the cp group for attention (Liu et al. 2023, ring attention;
// Megatron-Core context parallelism). Checked against hand calculations.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// Llama-like, 2 layers, h 1024, 8 heads with 2 KV heads (kv_dim 256), 8,192 tokens.
std::string spec(int cp, int gpus)
{
  return "hardware: {node: dgx-h100, gpus_per_node: " + std::to_string(gpus) +
         "}\nmodel: {layers: 2, hidden: 1024, heads: 8, kv_heads: 2, vocab: 4096, max_seq_len: 8192, mlp: swiglu, "
         "dropout: false}\ntraining: {seq_len: 8192, global_batch: 1, micro_batch: 1, cp: " +
         std::to_string(cp) + "}\n";
}

} // namespace

TEST_CASE("cp_2_halves_per_gpu_activations", "[cp]")
{
  nlohmann::json one = run_json("cp1", spec(1, 1)), two = run_json("cp2", spec(2, 2));
  double a1 = one["devices"][0]["max_by_category"]["activations"].get<double>();
  double a2 = two["devices"][0]["max_by_category"]["activations"].get<double>();
  // Every saved tensor is per token (the log-sum-exp per query): half the tokens, half the bytes.
  CHECK(a2 == Approx(a1 / 2).epsilon(1e-12));
}

TEST_CASE("cp_splits_queries_but_each_attends_over_the_whole_sequence", "[cp]")
{
  OpDag one = spec_workload(spec(1, 1)), two = spec_workload(spec(2, 2));
  // Attention core: 2 x 2 b s_q s_k h FLOPs; s_q halves, s_k stays: half per rank.
  const double s = 8192, h = 1024;
  auto core = [](const OpDag& d) {
    return op_sum(d, "L0.fwd.attn", OpKind::kernel, true) - op_sum(d, "L0.fwd.attn.", OpKind::kernel, true);
  };
  CHECK(core(one) == Approx(4 * s * s * h));
  CHECK(core(two) == Approx(4 * (s / 2) * s * h));
  // GEMMs on half the tokens.
  CHECK(op_sum(two, "L0.fwd.qkv", OpKind::kernel, true) == Approx(op_sum(one, "L0.fwd.qkv", OpKind::kernel, true) / 2));
}

TEST_CASE("cp_gathers_k_and_v_before_attention_and_reduces_their_gradients_after", "[cp]")
{
  OpDag two = spec_workload(spec(2, 2));
  // K and V of the whole sequence, bf16: s x 2 kv_dim x 2 bytes = 8192 x 512 x 2, gathered
  // once in forward and once more in backward; their gradients reduce-scattered once.
  const double kv = 8192.0 * 2 * 256 * 2;
  CHECK(op_sum(two, "L0.fwd.", OpKind::collective, false) == kv);
  CHECK(op_sum(two, "L0.bwd.", OpKind::collective, false) == 2 * kv);
  // Each rank receives (cp - 1) / cp of a gather: on 2 GPUs of an NVSwitch that is half
  // of it per gather on each GPU's NVLink (2 layers x 2 gathers, 2 layers x 1 reduce-scatter).
  nlohmann::json j = run_json("cp2-links", spec(2, 2));
  double down      = 0;
  for (const auto& l : j["links"])
    if (l["name"] == "node0.gpu0.nvlink.down")
      down = l["bytes"].get<double>();
  // Plus the gradients' all-reduce between the two ranks (they hold the same parameters).
  CHECK(down > 2 * 3 * kv / 2);
}

TEST_CASE("a_cp_that_does_not_divide_the_sequence_is_refused", "[cp][errors]")
{
  CHECK_THAT(refused("cp3", "hardware: {node: dgx-h100, gpus_per_node: 3}\nmodel: {preset: gpt2}\n"
                            "training: {seq_len: 1000, global_batch: 1, cp: 3}\n"),
             Catch::Contains("training.cp") && Catch::Contains("does not divide seq_len 1000"));
  CHECK_THAT(refused("cp-gpus", "hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {preset: gpt2}\n"
                                "training: {seq_len: 1024, global_batch: 1, cp: 8}\n"),
             Catch::Contains("tp x pp x cp = 8 does not divide the 4 GPUs"));
}

TEST_CASE("a_pipeline_stage_under_cp_sends_only_its_share_of_the_sequence", "[cp]")
{
  // pp 2 x cp 2 on 4 GPUs, one micro-batch of 8,192 tokens: each rank's activation
  // holds its 4,096 tokens x h 1024 x 2 bytes = 8 MiB, and that is what it sends on.
  std::string yaml = "hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {layers: 2, hidden: 1024, heads: 8, "
                     "kv_heads: 2, vocab: 4096, max_seq_len: 8192, mlp: swiglu, dropout: false}\n"
                     "training: {seq_len: 8192, global_batch: 1, micro_batch: 1, pp: 2, cp: 2}\n";
  OpDag dag        = spec_workload(yaml);
  CHECK(op_sum(dag, "pp.send_act.", OpKind::copy, false) == 4096.0 * 1024 * 2);
  CHECK(op_sum(dag, "pp.send_grad.", OpKind::copy, false) == 4096.0 * 1024 * 2);
}

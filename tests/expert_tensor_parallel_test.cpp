// Expert tensor parallelism and MoE parallel folding (Megatron-Core's
// expert_tensor_parallel_size; Liu et al. 2025, "MoE Parallel Folding"): the ranks of a
// pipeline stage, r = t + tp d, are also r = et + etp (e + ep k). The groups, the
// collectives around the experts and the experts' memory, against hand calculations.
#include "tests/TestHelpers.hpp"
#include "workloads/training/ParallelLayout.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// h 512, 8 experts of inner size 1024 (SwiGLU: 3 matrices), top-2, one layer.
std::string spec(const std::string& training)
{
  return "hardware: {node: dgx-h100}\nmodel: {layers: 1, hidden: 512, heads: 8, vocab: 1024, max_seq_len: 1024, "
         "mlp: swiglu, num_experts: 8, experts_per_token: 2, moe_ffn_hidden: 1024}\n"
         "training: {seq_len: 1024, global_batch: 4, micro_batch: 1, tp: 2, sp: true, " +
         training + "}\n";
}

DeviceRef gpu(int i) { return {DeviceKind::gpu, 0, i}; }

} // namespace

TEST_CASE("moe_folding_puts_etp_ranks_together_and_ep_ranks_etp_apart", "[moe][etp][layout]")
{
  // tp 2 x dp 4 on 8 GPUs of one node: rank r = t + 2 d is GPU r.
  TrainingConfig c;
  c.tp  = 2;
  c.dp  = 4;
  c.ep  = 4;
  c.etp = 1; // experts whole: ranks 0..3 form the ep group, 0 and 4 hold the same experts
  ParallelLayout one(c, 8);
  CHECK(one.ep_group(0) == std::vector<DeviceRef>{gpu(0), gpu(1), gpu(2), gpu(3)});
  CHECK(one.edp() == 2);
  CHECK(one.edp_group(0) == std::vector<DeviceRef>{gpu(0), gpu(4)});
  // The other groups on the node, each once: ep {4..7}; edp {1,5} {2,6} {3,7}.
  CHECK(one.peer_ep_groups(0).size() == 1);
  CHECK(one.peer_edp_groups(0).size() == 3);
  CHECK(one.peer_edp_groups(0)[0] == std::vector<DeviceRef>{gpu(1), gpu(5)});
  c.etp = 2; // the default, etp = tp: the ep group is 4 dp ranks of tp index 0
  ParallelLayout two(c, 8);
  CHECK(two.etp_group(0) == std::vector<DeviceRef>{gpu(0), gpu(1)});
  CHECK(two.ep_group(0) == std::vector<DeviceRef>{gpu(0), gpu(2), gpu(4), gpu(6)});
  CHECK(two.edp() == 1);
  CHECK(two.peer_ep_groups(0)[0] == std::vector<DeviceRef>{gpu(1), gpu(3), gpu(5), gpu(7)});
}

TEST_CASE("etp_1_keeps_experts_whole_with_only_all_to_alls_around_them", "[moe][etp]")
{
  // tp 2 with sequence parallelism: each rank routes T / 2 = 512 tokens, k = 2 copies.
  const double T = 1024, h = 512, f = 1024, k = 2, e = 2;
  // etp 2 (= tp): each rank receives 512 x 2 pairs (even routing), the etp pair
  // all-gathers 2 x 1,024 pairs before experts of half width, reduce-scatters after.
  OpDag split = spec_workload(spec("ep: 4"));
  CHECK(op_sum(split, "L0.fwd.moe.permute", OpKind::collective, false) == T / 2 * k * h * e);
  CHECK(op_sum(split, "L0.fwd.moe.sort", OpKind::collective, false) == T * k * h * e);
  CHECK(op_sum(split, "L0.fwd.moe.experts.down", OpKind::collective, false) == T * k * h * e);
  // etp 1, ep 8: every rank is an ep rank with one whole expert; it receives 512 x 2
  // pairs and computes them alone: no gather, no scatter, the same all-to-all bytes.
  OpDag whole = spec_workload(spec("ep: 8, etp: 1"));
  CHECK(op_sum(whole, "L0.fwd.moe.permute", OpKind::collective, false) == T / 2 * k * h * e);
  CHECK(op_sum(whole, "L0.fwd.moe.sort", OpKind::collective, false) == 0);
  CHECK(op_sum(whole, "L0.fwd.moe.experts.down", OpKind::collective, false) == 0);
  // Same FLOPs per rank either way: 2,048 pairs through half-width experts (split) or
  // 1,024 through whole ones: 2 x 1,024 x h x 2f for the gate and up projections.
  double up = 2 * (T / 2 * k) * h * 2 * f;
  CHECK(op_sum(whole, "L0.fwd.moe.experts.up", OpKind::kernel, true) == Approx(up));
  CHECK(op_sum(split, "L0.fwd.moe.experts.up", OpKind::kernel, true) == Approx(up));
}

TEST_CASE("an_etp_1_rank_holds_its_experts_whole_and_shards_their_states_over_edp", "[moe][etp][memory]")
{
  // tp 2 x dp 4, ep 4: each rank holds 2 of the 8 experts (3 h f weights each), whole
  // with etp 1 (edp = 8 / (1 x 4) = 2 ranks share them), halved with etp 2 (edp = 1).
  // Everything else is the same in both layouts.
  nlohmann::json a = run_json("etp1", spec("ep: 4, etp: 1, zero: 1"));
  nlohmann::json b = run_json("etp2", spec("ep: 4, zero: 1"));
  const double h = 512, f = 1024, e = 2;
  // etp 1 holds 2 whole experts, etp 2 holds halves of 2: 3 h f x bytes more.
  double wa = a["devices"][0]["peak_by_category"]["weights"].get<double>();
  double wb = b["devices"][0]["peak_by_category"]["weights"].get<double>();
  CHECK(wa - wb == Approx(3 * h * f * e));
  // ZeRO-1 fp32 states (master, m, v: 12 bytes) of the experts over edp: etp 1 shards
  // 2 whole experts over 2 ranks, etp 2 two halves over 1: the same 3 h f x 12 bytes.
  auto states = [](const nlohmann::json& j) { return j["devices"][0]["peak_by_category"]["optimizer"].get<double>(); };
  CHECK(states(a) == Approx(states(b)));
}

TEST_CASE("impossible_expert_tensor_layouts_are_refused_with_one_line", "[moe][etp][errors]")
{
  CHECK_THAT(refused("etp-tp", spec("ep: 2, etp: 3")),
             Catch::Contains("training.etp") && Catch::Contains("etp = 3 must divide tp = 2"));
  CHECK_THAT(refused("etp-fold", spec("ep: 8, etp: 2")),
             Catch::Contains("training.ep") && Catch::Contains("etp x ep = 2 x 8 does not divide the 8 ranks"));
  CHECK_THAT(refused("etp-dense", "hardware: {node: dgx-h100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                                  "training: {seq_len: 128, global_batch: 2, tp: 2, etp: 1}\n"),
             Catch::Contains("training.etp") && Catch::Contains("needs a mixture-of-experts model"));
}

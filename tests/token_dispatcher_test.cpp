// MoE token dispatchers (workloads/training/dispatch): how many bytes each hop of a
// dispatch moves, against hand calculations of the nodes a token's experts land on
// (DeepSeek-V3 §3.2.2: node-limited routing, each token sent to a node once).
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

std::vector<DispatchHop> hops(const std::string& dispatcher, const DispatchShape& s)
{
  return default_token_dispatcher(dispatcher)->hops(s);
}

// h 512, 8 experts of inner size 1024, top-2, one layer; 2 nodes of 4 GPUs, ep 8.
std::string spec(const std::string& model_extra, const std::string& dispatcher)
{
  return "hardware: {node: dgx-h100, gpus_per_node: 4, nodes: 2}\nmodel: {layers: 1, hidden: 512, heads: 8, "
         "vocab: 1024, max_seq_len: 1024, mlp: swiglu, num_experts: 8, experts_per_token: 2, moe_ffn_hidden: 1024" +
         model_extra + "}\ntraining: {seq_len: 1024, global_batch: 8, ep: 8, moe_dispatcher: " + dispatcher + "}\n";
}

} // namespace

TEST_CASE("deepep_sends_a_deepseek_token_to_4_nodes_once_where_alltoall_sends_its_8_pairs", "[moe][dispatch]")
{
  // DeepSeek-V3: 256 experts in 8 groups, a token's top-8 from 4 groups; ep 64 over 8
  // nodes puts one group on each node. 4 of the 8 nodes are picked: M = 8 (1 - C(7,4) /
  // C(8,4)) = 8 (1 - 35/70) = 4 rows per token in the first hop, 7/8 of them crossing
  // nodes (3.5 rows, against alltoall's 8 pairs x 7/8 = 7); the NVLink hop forwards the
  // 8 pairs. Without the group limit: 8 (1 - C(224,8) / C(256,8)) = 5.2947 nodes.
  ModelSpec m = model_preset("deepseek-v3");
  REQUIRE(m.moe.expert_groups == 8);
  REQUIRE(m.moe.groups_per_token == 4);
  DispatchShape s{m.moe, 4096, 7168 * 2.0, 7168 * 2.0, 8, 64, 8};
  std::vector<DispatchHop> a = hops("alltoall", s), d = hops("deepep", s);
  REQUIRE(a.size() == 1);
  CHECK(a[0].bytes == 4096 * 8 * 7168 * 2.0);
  REQUIRE(d.size() == 2);
  CHECK(d[0].group == DispatchGroup::ep);
  CHECK(d[0].bytes == Approx(4096 * 4 * 7168 * 2.0));
  CHECK(d[1].group == DispatchGroup::ep_node);
  CHECK(d[1].bytes == 4096 * 8 * 7168 * 2.0);
  // FP8 experts (DeepSeek's training): tokens go out in FP8 with a 4-byte scale per 128
  // elements, 1.03125 bytes each, and come back in BF16; the alltoall dispatcher sends
  // 16 bits both ways.
  DispatchShape fp8          = s;
  fp8.fp8_row_bytes          = 7168 * 1.03125;
  std::vector<DispatchHop> q = hops("deepep", fp8);
  CHECK(q[0].dispatch_bytes == Approx(4096 * 4 * 7168 * 1.03125));
  CHECK(q[0].bytes == Approx(4096 * 4 * 7168 * 2.0));
  CHECK(q[1].dispatch_bytes == Approx(4096 * 8 * 7168 * 1.03125));
  CHECK(hops("alltoall", fp8)[0].dispatch_bytes == a[0].bytes);
  s.moe.expert_groups = s.moe.groups_per_token = 0;
  CHECK(hops("deepep", s)[0].bytes == Approx(4096 * 5.294652 * 7168 * 2.0).epsilon(1e-6));
  // Inside one node there is nothing to deduplicate: the alltoall dispatcher's one hop.
  s.ep_nodes = 1;
  REQUIRE(hops("deepep", s).size() == 1);
  CHECK(hops("deepep", s)[0].bytes == a[0].bytes);
}

TEST_CASE("a_two_hop_dispatch_replays_its_rdma_and_nvlink_all_to_alls_each_way", "[moe][dispatch]")
{
  // 8 experts on 2 nodes of 4 GPUs, top-2, 1,024 tokens per rank, 512 x 2 bytes a row.
  // Without groups: M = 2 (1 - C(4,2) / C(8,2)) = 2 (1 - 6/28) = 11/7 nodes; in 2 groups
  // of 4 with 1 per token: M = 1. The NVLink hop moves the 2 pairs of each token.
  const double T = 1024, row = 512 * 2;
  OpDag plain = spec_workload(spec("", "deepep"));
  CHECK(op_sum(plain, "L0.fwd.moe.permute", OpKind::collective, false) == Approx(T * 11.0 / 7 * row));
  CHECK(op_sum(plain, "L0.fwd.moe.forward", OpKind::collective, false) == T * 2 * row);
  CHECK(op_sum(plain, "L0.fwd.moe.unsort", OpKind::collective, false) == T * 2 * row);
  CHECK(op_sum(plain, "L0.fwd.moe.reduce", OpKind::collective, false) == Approx(T * 11.0 / 7 * row));
  OpDag grouped = spec_workload(spec(", expert_groups: 2, groups_per_token: 1", "deepep"));
  CHECK(op_sum(grouped, "L0.fwd.moe.permute", OpKind::collective, false) == T * row);
  // The backward sends the gradients the same ways: both hops twice more.
  CHECK(op_sum(grouped, "L0.bwd.moe.", OpKind::collective, false) == 2 * (T * row + T * 2 * row));
  // In FP8 the dispatch direction (the forward's dispatch, the backward's gradient of
  // the combine) carries 1.03125 bytes per element, the combine direction 2.
  OpDag fp8 = spec_workload(spec(", expert_groups: 2, groups_per_token: 1", "deepep, precision: fp8"));
  CHECK(op_sum(fp8, "L0.fwd.moe.permute", OpKind::collective, false) == Approx(T * 512 * 1.03125));
  CHECK(op_sum(fp8, "L0.fwd.moe.reduce", OpKind::collective, false) == Approx(T * row));
  CHECK(op_sum(fp8, "L0.bwd.moe.", OpKind::collective, false) ==
        Approx((T + 2 * T) * 512 * 1.03125 + (T + 2 * T) * row));
  // The alltoall dispatcher: one all-to-all of the pairs each way.
  OpDag a2a = spec_workload(spec("", "alltoall"));
  CHECK(op_sum(a2a, "L0.fwd.moe.permute", OpKind::collective, false) == T * 2 * row);
  CHECK(op_sum(a2a, "L0.fwd.moe.forward", OpKind::collective, false) == 0);
}

TEST_CASE("impossible_routing_groups_and_unknown_dispatchers_are_refused_with_one_line", "[moe][dispatch][errors]")
{
  CHECK_THAT(refused("groups-3", spec(", expert_groups: 3, groups_per_token: 1", "deepep")),
             Catch::Contains("model.expert_groups") && Catch::Contains("must divide the 8 experts"));
  CHECK_THAT(refused("groups-k", spec(", expert_groups: 8, groups_per_token: 1", "deepep")),
             Catch::Contains("model.expert_groups") && Catch::Contains("at least experts_per_token"));
  CHECK_THAT(refused("groups-alone", spec(", groups_per_token: 1", "deepep")),
             Catch::Contains("model.groups_per_token") && Catch::Contains("needs expert_groups"));
  CHECK_THAT(refused("dispatcher-name", spec("", "deep_ep")),
             Catch::Contains("training.moe_dispatcher") && Catch::Contains("deepep"));
  CHECK_THAT(refused("dispatcher-dense", "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                                         "training: {seq_len: 128, moe_dispatcher: deepep}\n"),
             Catch::Contains("training.moe_dispatcher") && Catch::Contains("needs a mixture-of-experts model"));
}

// Mixture-of-experts training: the FLOPs, all-to-all bytes, load imbalance and memory
// of MoE layers under expert parallelism, against hand calculations written out
// (Shazeer et al. 2017; Fedus et al. 2022; Megatron-Core's all-to-all dispatcher).
#include "sim/Simulation.hpp"
#include "sim/collective/RingSteps.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/model/ExpertLoad.hpp"

#include <filesystem>
#include <map>

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// h 512, 8 experts of inner size 1024 (SwiGLU: 3 matrices), top-2, one layer.
const std::string moe_model = "model: {layers: 1, hidden: 512, heads: 8, vocab: 1024, max_seq_len: 1024, mlp: swiglu, "
                              "num_experts: 8, experts_per_token: 2, moe_ffn_hidden: 1024";

std::string spec(const std::string& hardware, const std::string& model_extra, const std::string& training)
{
  return "hardware: " + hardware + "\n" + moe_model + model_extra + "}\ntraining: {seq_len: 1024, " + training + "}\n";
}

} // namespace

TEST_CASE("moe_layer_forward_flops_per_token_are_k_experts_and_the_router", "[moe]")
{
  OpDag dag      = spec_workload(spec("{node: dgx-h100, gpus_per_node: 1}", "", "global_batch: 1, micro_batch: 1"));
  const double T = 1024, h = 512, f = 1024, E = 8, k = 2;
  // Per token: router h x E; each of k experts gate+up (h x 2f) and down (f x h); 2 FLOPs per MAC.
  const double router = 2 * h * E, expert = 2 * h * 2 * f + 2 * f * h;
  CHECK(op_sum(dag, "L0.fwd.moe.router", OpKind::kernel, true) == Approx(T * router));
  CHECK(op_sum(dag, "L0.fwd.moe.experts.up", OpKind::kernel, true) +
            op_sum(dag, "L0.fwd.moe.experts.down", OpKind::kernel, true) ==
        Approx(T * k * expert));
  // Against the same model made dense with one MLP of inner size k x f: equal GEMM FLOPs.
  OpDag dense = spec_workload("hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {layers: 1, hidden: 512, heads: 8, "
                              "vocab: 1024, max_seq_len: 1024, mlp: swiglu, ffn_hidden: 2048}\n"
                              "training: {seq_len: 1024, global_batch: 1, micro_batch: 1}\n");
  CHECK(op_sum(dense, "L0.fwd.mlp.up", OpKind::kernel, true) + op_sum(dense, "L0.fwd.mlp.down", OpKind::kernel, true) ==
        Approx(T * k * expert));
}

TEST_CASE("each_all_to_all_of_a_layer_carries_tokens_times_k_times_hidden_bytes", "[moe]")
{
  // ep 8 on one DGX H100: each rank dispatches its T tokens' k copies (bf16) and gets them back.
  OpDag dag      = spec_workload(spec("{node: dgx-h100}", "", "global_batch: 8, micro_batch: 1, ep: 8"));
  const double T = 1024, h = 512, k = 2, e = 2;
  CHECK(op_sum(dag, "L0.fwd.moe.permute", OpKind::collective, false) == T * k * h * e);
  CHECK(op_sum(dag, "L0.fwd.moe.unsort", OpKind::collective, false) == T * k * h * e);
  // Backward: the gradients go the same ways.
  CHECK(op_sum(dag, "L0.bwd.moe.", OpKind::collective, false) == 2 * T * k * h * e);
}

TEST_CASE("an_all_to_all_sends_ep_minus_1_over_ep_of_each_ranks_buffer_at_once", "[moe][collectives]")
{
  // 8 GPUs on an NVSwitch at B = 400 GB/s, 2 us per hop: each GPU sends S/8 to each of 7
  // peers at once on its port, 7/8 S in all, and receives as much.
  const int n    = 8;
  const double S = 1e9, B = 400e9, alpha = 2e-6;
  ClusterSpec c = hand_cluster(n, GpuFabric::nvswitch, 2);
  OpDag dag;
  std::vector<DeviceRef> g;
  for (int i = 0; i < n; ++i)
    g.push_back({DeviceKind::gpu, 0, i});
  dag.add(
      collective_op({DeviceKind::gpu, 0, 0}, StreamKind::comm, CollectiveKind::all_to_all, dag.add_group(g), S, "a2a"));
  RunResult r = replay_in_child(c, dag, {.collective_algorithm = "ring"});
  CHECK(record(r, "a2a").end == Approx((n - 1.0) / n * S / B + alpha).epsilon(1e-9));
}

TEST_CASE("a_hot_expert_with_10_percent_more_tokens_makes_its_rank_compute_10_percent_more", "[moe]")
{
  // Even routing: each of 8 experts gets k/E = 25 % of the tokens. Hot: the busiest
  // expert gets 27.5 %, 10 % more; with one expert per rank its rank computes 1.1 x
  // T k / ... = 2.2 T pairs instead of 2 T, and receives 10 % more in each all-to-all.
  const std::string even = spec("{node: dgx-h100}", "", "global_batch: 8, micro_batch: 1, ep: 8");
  const std::string hot =
      spec("{node: dgx-h100}", ", hot_expert_tokens: 0.275", "global_batch: 8, micro_batch: 1, ep: 8");
  OpDag a = spec_workload(even), b = spec_workload(hot);
  for (const char* p : {"L0.fwd.moe.experts.up", "L0.fwd.moe.experts.down", "L0.bwd.moe.experts.up"})
    CHECK(op_sum(b, p, OpKind::kernel, true) == Approx(1.1 * op_sum(a, p, OpKind::kernel, true)));
  CHECK(op_sum(b, "L0.fwd.moe.permute", OpKind::collective, false) ==
        Approx(1.1 * op_sum(a, "L0.fwd.moe.permute", OpKind::collective, false)));
  // Replayed: the layer slows by the hot rank's extra work. Its expert GEMMs and the
  // all-to-alls take longer; nothing else changes.
  auto js           = [](const std::string& y) { return run_json("moe-hot", y); };
  nlohmann::json ja = js(even), jb = js(hot);
  double ta = ja["step_time_s"].get<double>(), tb = jb["step_time_s"].get<double>();
  CHECK(tb > ta);
  RunResult ra = simulate(parse_spec(even, "even.yaml", ""), true),
            rb = simulate(parse_spec(hot, "hot.yaml", ""), true);
  double extra = 0;
  for (const char* op : {"L0.fwd.moe.experts.up", "L0.fwd.moe.experts.down", "L0.fwd.moe.experts.act",
                         "L0.fwd.moe.permute.tp", "L0.fwd.moe.unsort.tp", "L0.fwd.moe.sort", "L0.fwd.moe.unsort"}) {
    const OpRecord &x = record(ra, op), &y = record(rb, op);
    extra += (y.end - y.start) - (x.end - x.start);
  }
  const OpRecord &la = record(ra, "L0.fwd.mlp.residual"), &lb = record(rb, "L0.fwd.mlp.residual");
  // The forward reaches the layer's last kernel later by exactly the extra time of the
  // hot rank's MoE ops (one stream: they run one after another).
  CHECK(lb.end - la.end == Approx(extra).epsilon(1e-9));
  CHECK(extra > 0);
}

TEST_CASE("expert_parallelism_keeps_one_share_of_the_experts_and_all_of_the_rest_per_gpu", "[moe][memory]")
{
  // 8 experts over ep 8: one expert of the layer per GPU, attention, norms and router whole.
  nlohmann::json j =
      run_json("moe-weights", spec("{node: dgx-h100}", "", "global_batch: 8, micro_batch: 1, ep: 8, zero: 1"));
  const double h = 512, f = 1024, V = 1024;
  const double attention   = 4 * h * h + 4 * h /* qkv and proj biases: 3h + h */;
  const double layer_dense = attention + 2 * (2 * h) /* two layer norms */ + 8 * h /* router */;
  const double embed = V * h + 1024 * h /* learned positions */, final_norm = 2 * h;
  double weights = (layer_dense + 3 * h * f /* one expert, no biases */ + embed + final_norm) * 2; // bf16
  CHECK(j["devices"][0]["peak_by_category"]["weights"].get<double>() == Approx(weights));
}

TEST_CASE("impossible_expert_layouts_are_refused_with_one_line", "[moe][errors]")
{
  // ep must divide the experts and the dp ranks; MoE keys need experts; ep needs an MoE model.
  CHECK_THAT(refused("moe-ep3", spec("{node: dgx-h100, gpus_per_node: 6}", "", "global_batch: 6, ep: 3")),
             Catch::Contains("training.ep") && Catch::Contains("does not divide the model's 8 experts"));
  CHECK_THAT(refused("moe-ep-dp", spec("{node: dgx-h100, gpus_per_node: 4}", "", "global_batch: 4, ep: 8")),
             Catch::Contains("does not divide the 4 ranks of a pipeline stage (tp x dp = 1 x 4)"));
  CHECK_THAT(refused("moe-dense-key", "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: gpt2, "
                                      "experts_per_token: 2}\ntraining: {seq_len: 128}\n"),
             Catch::Contains("model.experts_per_token") && Catch::Contains("the model has no experts"));
  CHECK_THAT(
      refused("moe-dense-ep", "hardware: {node: dgx-h100}\nmodel: {preset: gpt2}\ntraining: {seq_len: 128, ep: 2}\n"),
      Catch::Contains("expert parallelism needs a mixture-of-experts model"));
  CHECK_THAT(refused("moe-topk", "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: mixtral-8x7b, "
                                 "experts_per_token: 9}\ntraining: {seq_len: 128}\n"),
             Catch::Contains("must be 1..8"));
  CHECK_THAT(
      refused("moe-hot", spec("{node: dgx-h100, gpus_per_node: 1}", ", hot_expert_tokens: 0.1", "global_batch: 1")),
      Catch::Contains("below the even share"));
  CHECK_THAT(refused("moe-tp-no-sp", spec("{node: dgx-h100}", "", "global_batch: 4, tp: 2, ep: 4")),
             Catch::Contains("need sp: true"));
}

TEST_CASE("a_folded_all_to_all_loads_every_port_as_the_pairwise_one", "[moe][collectives]")
{
  // 3 nodes x 4 GPUs: the pairwise plan sends S/12 between every pair. Per GPU that is
  // 3 S/12 to its node peers and 8 S/12 to other nodes, and as much in; per node 32 S/12
  // out and in over the network. The folded plan must give each the same bytes.
  std::vector<DeviceRef> g;
  for (int n = 0; n < 3; ++n)
    for (int i = 0; i < 4; ++i)
      g.push_back({DeviceKind::gpu, n, i});
  const double S = 12e6;
  auto loads     = [&](const CollectivePhase& p) {
    std::map<std::string, double> l;
    for (const Flow& f : p.flows) {
      bool cross = f.src.node != f.dst.node;
      l["out" + std::string(cross ? "x" : "i") + std::to_string(f.src.node) + "." + std::to_string(f.src.index)] +=
          f.bytes;
      l["in" + std::string(cross ? "x" : "i") + std::to_string(f.dst.node) + "." + std::to_string(f.dst.index)] +=
          f.bytes;
      if (cross) {
        l["node_out" + std::to_string(f.src.node)] += f.bytes;
        l["node_in" + std::to_string(f.dst.node)] += f.bytes;
      }
    }
    return l;
  };
  CollectivePhase folded = all_to_all_phase(g, S, true), pairwise = all_to_all_phase(g, S, false);
  CHECK(pairwise.flows.size() == 12 * 11);
  CHECK(folded.flows.size() == 2 * 12);
  std::map<std::string, double> a = loads(folded), b = loads(pairwise);
  REQUIRE(a.size() == b.size());
  for (const auto& [k, v] : b) {
    INFO(k);
    CHECK(a[k] == Approx(v));
  }
  CHECK(b["outx0.0"] == Approx(8 * S / 12));
  CHECK(b["node_out1"] == Approx(32 * S / 12));
  // A group that is not whole nodes' worth of the same GPUs keeps the pairwise flows.
  std::vector<DeviceRef> ragged(g.begin(), g.begin() + 6);
  CHECK(all_to_all_phase(ragged, S, true).flows.size() == 6 * 5);
}

TEST_CASE("an_uneven_pipeline_puts_the_named_layers_on_the_first_and_last_stages", "[moe][layout]")
{
  // 61 layers over 16 stages (DeepSeek-V3): 3 first, 2 last, 56 / 14 = 4 on the others.
  TrainingConfig t;
  t.pp                       = 16;
  t.first_stage_layers       = 3;
  t.last_stage_layers        = 2;
  std::vector<int64_t> split = t.stage_layers(61);
  REQUIRE(split.size() == 16);
  CHECK(split.front() == 3);
  CHECK(split.back() == 2);
  for (size_t s = 1; s + 1 < split.size(); ++s)
    CHECK(split[s] == 4);
  t.last_stage_layers = 3; // 55 over 14 stages does not split
  CHECK(t.stage_layers(61).empty());
  CHECK_THAT(refused("uneven", "hardware: {node: dgx-h100, nodes: 2}\nmodel: {preset: gpt2}\n"
                               "training: {seq_len: 128, pp: 4, global_batch: 16, first_stage_layers: 2}\n"),
             Catch::Contains("training.first_stage_layers") &&
                 Catch::Contains("do not split evenly over the other 3 stages"));
  // The blocks land where the split says: the first stage's GPU runs L0-L2 only.
  OpDag dag =
      spec_workload("hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {preset: gpt2}\n"
                    "training: {seq_len: 128, pp: 4, global_batch: 4, first_stage_layers: 3, last_stage_layers: 1}\n");
  std::map<std::string, int> layer_gpu = layer_gpus(dag);
  CHECK(layer_gpu["L2"] == 0);
  CHECK(layer_gpu["L3"] == 1); // (12 - 3 - 1) / 2 = 4 layers on stages 1 and 2
  CHECK(layer_gpu["L10"] == 2);
  CHECK(layer_gpu["L11"] == 3);
}

TEST_CASE("a_capacity_factor_caps_the_hot_expert_and_drops_its_excess", "[moe]")
{
  // 8 experts, top-2, ep 4 (2 experts per rank). Per token of a rank the group routes
  // 4 x 2 = 8 pairs; the hot expert is sent 0.4 x 4 = 1.6 of them, the other 7 share
  // 6.4 (0.914 each). Dropless: the hot rank computes 1.6 + 0.914 = 2.514.
  MoeSpec moe;
  moe.experts           = 8;
  moe.top_k             = 2;
  moe.hot_expert_tokens = 0.4;
  ExpertLoad dropless   = expert_load(moe, 4);
  CHECK(dropless.local_experts == 2);
  CHECK(dropless.busiest_pairs == Approx(1.6 + 6.4 / 7));
  CHECK(dropless.dropped_share == 0);
  // Capacity factor 1.25: each expert takes at most 1.25 x 8 / 8 = 1.25 pairs; the hot
  // one drops 0.35 of its 1.6, 0.35 / 8 = 4.4 % of all pairs.
  moe.capacity_factor = 1.25;
  ExpertLoad capped   = expert_load(moe, 4);
  CHECK(capped.busiest_pairs == Approx(1.25 + 6.4 / 7));
  CHECK(capped.dropped_share == Approx(0.35 / 8));
}

TEST_CASE("the_run_title_states_the_routing_the_replay_assumed", "[moe][outputs]")
{
  // hot 0.4 of 8 experts top-2 at ep 4, capacity 1.25: 1.25 + 6.4/7 = 2.164 pairs per
  // token on the busiest GPU against an even 2 (1.08x), 0.35 / 8 = 4.4 % dropped.
  std::string yaml = spec("{node: dgx-h100, gpus_per_node: 4}", ", hot_expert_tokens: 0.4, capacity_factor: 1.25",
                          "global_batch: 4, micro_batch: 1, ep: 4");
  std::string path = temp_path("moe-title.yaml");
  write_file(path, yaml);
  CliResult r = run_cli("run " + path);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("experts 8 routed, top 2; 2 per GPU on ep 4; busiest GPU 1.08x an even share, "
                                    "4.4 % of token-expert pairs dropped"));
}

TEST_CASE("the_json_summary_states_the_busiest_gpus_share_and_the_dropped_pairs", "[moe][outputs]")
{
  // As a_capacity_factor_caps_the_hot_expert_and_drops_its_excess: ep 4, the hot expert
  // sent 40 % of the tokens, capacity factor 1.25. The busiest GPU computes 1.25 +
  // 6.4 / 7 pairs per token against an even 2: 1.0821x; 0.35 / 8 = 4.375 % dropped.
  nlohmann::json j = run_json("moe-summary", spec("{node: dgx-h100, gpus_per_node: 4}",
                                                  ", hot_expert_tokens: 0.4, capacity_factor: 1.25",
                                                  "global_batch: 4, micro_batch: 1, ep: 4"));
  CHECK(j["moe"]["experts_per_gpu"] == 2.0);
  CHECK(j["moe"]["busiest_gpu_share"].get<double>() == Approx((1.25 + 6.4 / 7) / 2));
  CHECK(j["moe"]["dropped_share"].get<double>() == Approx(0.35 / 8));
  // A dense model has no such key.
  CHECK_FALSE(run_json("dense-summary", small_training_spec).contains("moe"));
  // A sweep over the capacity factor can name the column in a metric.
  std::string sweep = temp_path("moe-sweep.yaml"), h5 = temp_path("moe-sweep.h5");
  std::filesystem::remove(h5);
  write_file(sweep,
             "spec:\n  hardware: {node: dgx-h100, gpus_per_node: 4}\n  " + moe_model +
                 ", hot_expert_tokens: 0.4}\n  training: {seq_len: 1024, global_batch: 4, ep: 4}\n"
                 "grid:\n  model.capacity_factor: [0, 1.25]\nmetrics:\n  dropped_pct: moe.dropped_share * 100\n");
  CliResult r = run_cli("sweep " + sweep + " -o " + h5);
  CHECK(r.exit_code == 0);
  CHECK_THAT(run_cli("report " + h5).out, Catch::Contains("4.375"));
}

TEST_CASE("expert_optimizer_states_are_whole_on_each_rank_without_zero", "[moe]")
{
  // tp 8, ep 4, etp 1 on one DGX H100, ZeRO-0: each rank holds 2 of the 8 experts whole
  // and, with no ZeRO, every state of every parameter it holds. Mixed precision Adam keeps
  // 12 B of fp32 master weights and moments per 2 B bf16 weight: optimizer = 6 x weights
  // (found by memwall optimize's memory floor: the experts' states were scaled by
  // ep x etp / tp = 1/2 as if sharded).
  nlohmann::json j = run_json("moe-zero0", spec("{node: dgx-h100}", "", "global_batch: 8, micro_batch: 1, tp: 8, "
                                                                        "sp: true, ep: 4, etp: 1, zero: 0"));
  const auto& peak = j["devices"][0]["peak_by_category"];
  CHECK(peak["optimizer"].get<double>() == Approx(6 * peak["weights"].get<double>()));
}

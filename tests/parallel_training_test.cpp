// Tensor, sequence and pipeline parallelism, ZeRO and recompute: memory and time that
// emerge from the replay, against the published formulas.
#include "analysis/StepReport.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

ExperimentSpec spec(const std::string& yaml) { return parse_spec(yaml, "test.yaml", ""); }

const PoolResult& gpu_pool(const RunResult& r, int node, int index)
{
  for (const auto& p : r.pools)
    if (p.device == DeviceRef{DeviceKind::gpu, node, index})
      return p;
  FAIL("no pool for GPU " << node << "." << index);
  return r.pools.front();
}

double category_max(const PoolResult& p, MemCategory c) { return p.max_by_category[static_cast<size_t>(c)]; }

double model_states(const PoolResult& p)
{
  return category_max(p, MemCategory::weights) + category_max(p, MemCategory::gradients) +
         category_max(p, MemCategory::optimizer);
}

} // namespace

TEST_CASE("zero_model_states_of_a_7_5b_model_match_table_i_at_nd_4_16_64_1024", "[zero]")
{
  // Rajbhandari et al. SC'20, Table I, mixed-precision Adam (K = 12), per device:
  //   baseline 16 Psi, Pos 4 Psi + 12 Psi/Nd, Pos+g 2 Psi + 14 Psi/Nd, Pos+g+p 16 Psi/Nd.
  // The model: 4 layers of h = 12500 hold 12 l h^2 = 7.5e9 parameters; biases, norms and
  // a 64-row vocabulary add 0.03 %. Table I prints these rounded (e.g. 41.3 GB for
  // 41.25, 0.12 GB for 0.117), so the check is against the formulas at Psi = 7.5e9.
  // ZeRO's mixed precision is fp16's (fp16 gradients).
  const double psi = 7.5e9;
  for (int nd : {4, 16, 64, 1024}) {
    for (int stage : {0, 1, 2, 3}) {
      double expected  = stage == 0   ? 16 * psi
                         : stage == 1 ? 4 * psi + 12 * psi / nd
                         : stage == 2 ? 2 * psi + 14 * psi / nd
                                      : 16 * psi / nd;
      int nodes        = nd / 4;
      std::string yaml = "hardware: {node: dgx-h100, gpus_per_node: 4, nodes: " + std::to_string(nodes) +
                         "}\n"
                         "model: {layers: 4, hidden: 12500, heads: 100, vocab: 64, max_seq_len: 64}\n"
                         "training: {seq_len: 64, global_batch: " +
                         std::to_string(nd) + ", micro_batch: 1, zero: " + std::to_string(stage) +
                         ", precision: fp16, bucket_bytes: 16 GB}\n";
      INFO("Nd = " << nd << ", stage " << stage);
      RunResult r = simulate(spec(yaml), true);
      CHECK(model_states(gpu_pool(r, 0, 0)) == Approx(expected).epsilon(0.005));
    }
  }
}

namespace {

// Korthikanti et al. 2022: s = 1024, b = 2, h = 1024, a = 16, flash off, dropout on,
// 16-bit activations. Per-layer activations are the difference between stacks of 4 and
// 2 layers (the embedding and head cancel), on one node of t GPUs.
double per_layer_activations(int t, const std::string& extra)
{
  auto stack = [&](int layers) {
    std::string yaml = "hardware: {node: dgx-a100, gpus_per_node: " + std::to_string(t) +
                       "}\n"
                       "model: {layers: " +
                       std::to_string(layers) +
                       ", hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 2048}\n"
                       "training: {seq_len: 1024, global_batch: 2, micro_batch: 2, flash_attention: false, tp: " +
                       std::to_string(t) + (extra.empty() ? "" : ", " + extra) + "}\n";
    RunResult r = simulate(spec(yaml), true);
    return category_max(gpu_pool(r, 0, 0), MemCategory::activations);
  };
  return (stack(4) - stack(2)) / 2;
}

} // namespace

TEST_CASE("activations_per_layer_follow_korthikanti_table_2_for_tp_sp_and_recompute", "[memory][tp]")
{
  const double s = 1024, b = 2, h = 1024, a = 16, t = 4;
  const double sbh = s * b * h;
  SECTION("tensor parallel: sbh(10 + 24/t + 5as/(ht))")
  {
    CHECK(per_layer_activations(4, "") == Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))).epsilon(0.02));
  }
  SECTION("tensor + sequence parallel: sbh(34/t + 5as/(ht))")
  {
    CHECK(per_layer_activations(4, "sp: true") == Approx(sbh * (34 / t + 5 * a * s / (h * t))).epsilon(0.02));
  }
  SECTION("tensor parallel + selective recompute: sbh(10 + 24/t)")
  {
    CHECK(per_layer_activations(4, "recompute: selective") == Approx(sbh * (10 + 24 / t)).epsilon(0.02));
  }
  SECTION("tensor + sequence parallel + selective recompute: 34 sbh / t")
  {
    CHECK(per_layer_activations(4, "sp: true, recompute: selective") == Approx(sbh * 34 / t).epsilon(0.02));
  }
  SECTION("full recompute keeps only the layer input: 2 sbh")
  {
    CHECK(per_layer_activations(1, "recompute: full") == Approx(2 * sbh).epsilon(0.02));
  }
}

TEST_CASE("tp_2_halves_the_per_gpu_weights", "[tp]")
{
  // Megatron splits every matrix (and the vocabulary) over the tp ranks; only the
  // norm weights, 2 x 2h per layer, are replicated: 0.02 % of GPT-2 medium.
  auto weights = [&](int tp) {
    RunResult r = simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2-medium}\n"
                                "training: {seq_len: 512, global_batch: 2, micro_batch: 1, tp: " +
                                std::to_string(tp) + ", dp: " + std::to_string(2 / tp) + "}\n"),
                           true);
    return category_max(gpu_pool(r, 0, 0), MemCategory::weights);
  };
  CHECK(weights(2) / weights(1) == Approx(0.5).epsilon(0.002));
}

TEST_CASE("tp_groups_sharing_a_node_all_reduce_as_fast_as_one_alone", "[tp]")
{
  // tp 4 x dp 2 on a DGX H100: GPUs 0-3 and 4-7 are two tp groups; tp 2 x dp 4: four
  // pairs. Each group uses its own GPUs' NVLink ports. A ring all-reduce of S bytes over
  // n ranks sends 2(n-1)/n S through every port in 2(n-1) steps of one NVLink hop each
  // (catalog: 450 GB/s a port; dgx-h100 nvlink_latency_s 1 us). S = s b h x 2 bytes.
  // Line rate (profile: none, the textbook ring of `auto` rather than NCCL's model), so
  // that the hand calculation needs no fitted NCCL curve.
  auto proj_allreduce = [](int tp, int gpus) {
    RunResult r = simulate(spec("hardware: {node: dgx-h100, profile: none, gpus_per_node: " + std::to_string(gpus) +
                                ", network: {collective_algorithm: auto}}\n"
                                "model: {layers: 2, hidden: 4096, heads: 32, vocab: 1024, max_seq_len: 4096}\n"
                                "training: {seq_len: 4096, micro_batch: 1, tp: " +
                                std::to_string(tp) + ", global_batch: " + std::to_string(gpus / tp) + "}\n"),
                           true);
    const OpRecord& op = test::record(r, "L0.fwd.proj.tp");
    return op.end - op.start;
  };
  const double bytes = 4096.0 * 4096 * 2;
  for (int tp : {2, 4}) {
    const double n = tp, by_hand = 2 * (n - 1) / n * bytes / 450e9 + 2 * (n - 1) * 1e-6;
    INFO("tp " << tp);
    CHECK(proj_allreduce(tp, tp) == Approx(by_hand).epsilon(0.01));
    CHECK(proj_allreduce(tp, 8) == Approx(by_hand).epsilon(0.01));
  }
}

namespace {

// A pipeline of 4 identical stages of 2 layers (the vocabulary of 128 makes the
// embedding and head negligible); no tp or dp, so only the schedule and the small
// stage-to-stage sends over NVLink stand between the stages.
RunResult pipeline(const std::string& schedule, int micro_batches, int virtual_stages = 1)
{
  return simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 4}\n"
                       "model: {layers: 8, hidden: 4096, heads: 32, vocab: 128, max_seq_len: 2048}\n"
                       "training: {seq_len: 2048, micro_batch: 1, pp: 4, optimizer: sgd, global_batch: " +
                       std::to_string(micro_batches) + ", pipeline_schedule: " + schedule +
                       ", virtual_stages: " + std::to_string(virtual_stages) + "}\n"),
                  true);
}

// Bubble time over the ideal time m (t_f + t_b) of the first stage: its forward and
// backward kernels, without the optimizer passes that follow them.
double bubble_fraction(const RunResult& r)
{
  double passes = 0;
  for (const auto& op : r.ops)
    if (op.device == DeviceRef{} && op.kind == OpKind::kernel &&
        (op.name.find(".fwd.") != std::string::npos || op.name.find(".bwd.") != std::string::npos))
      passes += op.end - op.start;
  return step_breakdown(r).pipeline_bubble / passes;
}

} // namespace

TEST_CASE("1f1b_and_gpipe_bubbles_are_p_minus_1_over_m", "[pp]")
{
  // Narayanan et al. SC'21, §2.2: bubble time / ideal time = (p - 1)/m.
  CHECK(bubble_fraction(pipeline("1f1b", 8)) == Approx(3.0 / 8).epsilon(0.02));
  CHECK(bubble_fraction(pipeline("gpipe", 8)) == Approx(3.0 / 8).epsilon(0.02));
  CHECK(bubble_fraction(pipeline("1f1b", 16)) == Approx(3.0 / 16).epsilon(0.02));
}

TEST_CASE("the_interleaved_bubble_is_divided_by_the_virtual_stages", "[pp]")
{
  // Narayanan et al. SC'21, §2.2.2: (p - 1)/(v m) with v = 2 chunks of one layer per stage.
  CHECK(bubble_fraction(pipeline("interleaved", 8, 2)) == Approx(3.0 / 16).epsilon(0.02));
}

TEST_CASE("a_heavier_last_stage_adds_its_extra_time_per_micro_batch_to_the_bubble", "[pp]")
{
  // 4 stages of 2 layers; a 64k vocabulary puts a logits GEMM and loss on the last stage
  // only. In 1F1B's steady state every micro-batch waits for the slowest stage, so the
  // first stage idles (p - 1)/m of its own passes plus the head's whole time over the m
  // micro-batches: stage imbalance, which Megatron-LM's placement of the head has too,
  // not an artefact of the replay (the deep 530B and 1T pipelines show exactly this).
  RunResult r   = simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 4}\n"
                                  "model: {layers: 8, hidden: 4096, heads: 32, vocab: 65536, max_seq_len: 2048}\n"
                                  "training: {seq_len: 2048, micro_batch: 1, pp: 4, optimizer: sgd, global_batch: 16}\n"),
                           true);
  double passes = 0, head = 0;
  for (const auto& op : r.ops) {
    bool pass = op.name.find(".fwd.") != std::string::npos || op.name.find(".bwd.") != std::string::npos;
    if (pass && op.kind == OpKind::kernel && op.device == DeviceRef{})
      passes += op.end - op.start;
    if (pass && op.name.rfind("head.", 0) == 0)
      head += op.end - op.start;
  }
  INFO("passes of stage 0 " << passes << " s, head " << head << " s");
  CHECK(head > passes / 2); // the imbalance is large enough to matter
  CHECK(step_breakdown(r).pipeline_bubble == Approx(3.0 / 16 * passes + head).epsilon(0.03));
}

TEST_CASE("the_first_1f1b_stage_holds_activations_of_p_micro_batches_and_gpipe_of_m", "[pp][memory]")
{
  // Korthikanti et al. 2022, §4.2.3: with 1F1B the first stage keeps p micro-batches
  // in flight; GPipe keeps all m.
  auto activations = [](const RunResult& r) { return category_max(gpu_pool(r, 0, 0), MemCategory::activations); };
  double one       = activations(pipeline("1f1b", 1));
  CHECK(activations(pipeline("1f1b", 8)) / one == Approx(4.0).epsilon(0.01));
  CHECK(activations(pipeline("gpipe", 8)) / one == Approx(8.0).epsilon(0.01));
  // The last stage runs one micro-batch at a time.
  const RunResult r = pipeline("1f1b", 8);
  CHECK(category_max(gpu_pool(r, 0, 3), MemCategory::activations) < 0.3 * activations(r));
}

TEST_CASE("zero3_all_gathers_overlap_compute_with_prefetch_and_are_exposed_without", "[zero]")
{
  auto run = [](int prefetch) {
    return simulate(spec("hardware: {node: dgx-a100}\nmodel: {preset: gpt2-xl}\n"
                         "training: {seq_len: 1024, global_batch: 16, micro_batch: 2, zero: 3, zero_prefetch: " +
                         std::to_string(prefetch) + "}\n"),
                    true);
  };
  RunResult with = run(1), without = run(0);
  Breakdown a = step_breakdown(with), b = step_breakdown(without);
  INFO("exposed with prefetch " << a.exposed_comm << " s, without " << b.exposed_comm << " s");
  CHECK(b.exposed_comm > 0.05 * b.compute);
  CHECK(a.exposed_comm < 0.3 * b.exposed_comm);
  CHECK(with.makespan_s < without.makespan_s);
  // Without prefetch one gathered layer is alive at a time; with depth 1, two.
  double layer = 2.0 * 1600 * 1600 * 12; // bf16, about 12 h^2 parameters per layer
  CHECK(category_max(gpu_pool(without, 0, 0), MemCategory::workspace) <
        category_max(gpu_pool(with, 0, 0), MemCategory::workspace));
  CHECK(category_max(gpu_pool(with, 0, 0), MemCategory::workspace) > 2 * layer);
}

TEST_CASE("zero_offload_on_two_gpus_behind_one_pcie_switch_is_slower_than_on_two_switches", "[offload]")
{
  // The gradients D2H and updated weights H2D of both ranks cross the switch's one
  // uplink when they share it; the second rank is folded into the first, so this only
  // shows if its traffic is replayed beside the representative's. A Gen3-like 6 GB/s
  // uplink makes PCIe, not the CPU's DRAM, the bottleneck of the offloaded step.
  auto run = [](int per_switch) {
    return simulate(
        spec("hardware:\n  node: {preset: dgx-a100, gpus: 2, sockets: 1, pcie_uplink_bw: 6 GB/s, "
             "gpus_per_pcie_switch: " +
             std::to_string(per_switch) +
             "}\n"
             "model: {preset: gpt2-xl}\n"
             "training: {seq_len: 1024, global_batch: 4, micro_batch: 2, zero: 2, offload: {optimizer: cpu}}\n"),
        true);
  };
  RunResult shared = run(2), separate = run(1);
  CHECK(shared.makespan_s > 1.1 * separate.makespan_s);
  auto uplink_bytes = [](const RunResult& r, const std::string& name) {
    for (const auto& l : r.links)
      if (l.name == name)
        return l.bytes;
    return 0.0;
  };
  // Both ranks' traffic crosses the shared uplink; each has its own otherwise.
  CHECK(uplink_bytes(shared, "node0.pcieswitch0.uplink.up") ==
        Approx(2 * uplink_bytes(separate, "node0.pcieswitch0.uplink.up")).epsilon(1e-9));
}

TEST_CASE("zero_offload_gradient_buckets_wait_for_their_d2h_copies_two_in_flight", "[offload]")
{
  // One A100, ZeRO-2 with the optimizer on the CPU: each layer's bf16 gradient is built
  // in a bucket of 12 h^2 x 2 B = 403 MB (h = 4096) and copied D2H at ~25 GB/s (16 ms),
  // while a layer's backward at micro-batch 1 of 1024 tokens takes ~7 ms. DeepSpeed
  // double-buffers its buckets (overlap_comm): backward waits once two are in flight,
  // so the workspace holds at most 2 buckets plus the layer's activation gradients
  // (2 T x 4h x 2 B = 33.6 MB) - never more at micro-batch 1 than at micro-batch 4.
  auto workspace = [](int micro_batch) {
    RunResult r = simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 1}\n"
                                "model: {layers: 8, hidden: 4096, heads: 32, vocab: 1024, max_seq_len: 1024}\n"
                                "training: {seq_len: 1024, global_batch: 4, zero: 2, offload: {optimizer: cpu}, "
                                "micro_batch: " +
                                std::to_string(micro_batch) + "}\n"),
                           true);
    return category_max(gpu_pool(r, 0, 0), MemCategory::workspace);
  };
  const double h = 4096, bucket = (12 * h * h + 13 * h) * 2, grads = 2 * 1024 * 4 * h * 2;
  double one = workspace(1);
  CHECK(one <= 2 * bucket + grads);
  CHECK(one <= workspace(4));
}

TEST_CASE("qlora_keeps_the_base_in_4_bit_and_trains_only_the_adapters", "[lora]")
{
  // GPT-2 medium, h = 1024, 24 layers, rank 8 on qkv (h -> 3h), proj (h -> h), mlp.up
  // (h -> 4h) and mlp.down (4h -> h): r (4h + 2h + 5h + 5h) = 16 r h adapter parameters
  // per layer, A = 16 * 8 * 1024 * 24 = 3,145,728. Adapters: bf16 weights and gradients,
  // Adam with fp32 master (12 B); Megatron's DDP accumulates the adapters' gradients in
  // its fp32 main-grad buffer (arguments.py: bf16 forces it). Base: NF4 with double
  // quantization, 4.127 bits per weight (Dettmers et al. 2023, section 3).
  ExperimentSpec s    = spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2-medium}\n"
                                "training: {seq_len: 512, global_batch: 2, micro_batch: 1, lora: {rank: 8, base: nf4}}\n");
  RunResult r         = simulate(s, true);
  const PoolResult& p = gpu_pool(r, 0, 0);
  const double A = 16.0 * 8 * 1024 * 24, psi = s.model.total_params();
  CHECK(category_max(p, MemCategory::gradients) == Approx(4 * A).epsilon(1e-9));
  CHECK(category_max(p, MemCategory::optimizer) == Approx(12 * A).epsilon(1e-9));
  CHECK(category_max(p, MemCategory::weights) == Approx(psi * 4.127 / 8 + 2 * A).epsilon(1e-9));
}

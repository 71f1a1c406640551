// Collectives decomposed into flows, against the ring all-reduce formula
// T = 2(n-1)/n * S/B + 2(n-1) * alpha (Patarasuk & Yuan 2009; NCCL's ring).
#include "hwmodels/profile/GpuProfile.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace memwall;
using namespace memwall::test;

namespace {

Op all_reduce(int32_t group, double bytes)
{
  return collective_op({DeviceKind::gpu, 0, 0}, StreamKind::comm, CollectiveKind::all_reduce, group, bytes,
                       "allreduce");
}

} // namespace

TEST_CASE("ring_all_reduce_of_s_bytes_over_n_gpus_takes_2_n_minus_1_over_n_s_over_b_plus_latencies", "[collectives]")
{
  // 8 GPUs on an NVSwitch: B = 400 GB/s per direction, alpha = 2 us per hop.
  const int n    = 8;
  const double S = 1e9, B = 400e9, alpha = 2e-6;
  ClusterSpec c = hand_cluster(n, GpuFabric::nvswitch, 2);
  for (const char* algorithm : {"ring", "bulk_ring", "auto"}) {
    OpDag dag;
    dag.add(all_reduce(dag.add_group(gpu_grid(1, n)), S));
    RunResult r     = replay_in_child(c, dag, {.collective_algorithm = algorithm});
    double expected = 2.0 * (n - 1) / n * S / B + 2 * (n - 1) * alpha; // 4.375 ms + 28 us
    INFO(algorithm);
    CHECK(record(r, "allreduce").end == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("hierarchical_all_reduce_scatters_in_node_reduces_per_rail_and_gathers_in_node", "[collectives]")
{
  // 2 nodes x 2 GPUs, NVLink 400 GB/s (2 us per hop) inside; across, each GPU's own
  // 25 GB/s NIC (rail), route latency 1 us (pcie) + 1 (nic) + 1 (switch) + 1 (nic) + 1 (pcie).
  ClusterSpec c        = hand_cluster(2, GpuFabric::nvswitch, 2);
  c.nodes              = 2;
  c.node.nics          = 2;
  c.node.nic_bw        = 25e9;
  c.node.nic_latency_s = 2e-6;
  c.switch_latency_s   = 1e-6;
  const double S = 1e9, g = 2, N = 2;
  OpDag dag;
  dag.add(all_reduce(dag.add_group(gpu_grid(2, 2)), S));
  RunResult r          = replay_in_child(c, dag, {.collective_algorithm = "hierarchical"});
  double intra         = (g - 1) * (S / g / 400e9 + 2e-6);        // reduce-scatter, then all-gather
  double inter         = 5e-6 + 2 * (N - 1) / N * (S / g) / 25e9; // bulk ring of the S/g shard per rail
  double extra_latency = (2 * (N - 1) - 1) * 5e-6;                // the ring's other step latencies
  CHECK(record(r, "allreduce").end == Approx(2 * intra + inter + extra_latency).epsilon(1e-12));
}

TEST_CASE("folding_collectives_to_what_the_replay_runs_changes_no_time", "[collectives]")
{
  // The replay holds representative ranks; flows between other GPUs run beside them on
  // their own links and are left out unless they share a link, directly or through
  // other flows, with a kept flow or with a route the replay runs (FlowFold.hpp). Every
  // op must end at the same instant as when every flow of every collective is started,
  // and every link the folded replay loads must carry what it carries unfolded.
  const char* layouts[] = {
      // ZeRO-3 over 4 nodes: one dp group of 32 ranks, gathers and scatters each layer.
      "hardware: {node: dgx-a100, nodes: 4}\n"
      "model: {layers: 2, hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 512}\n"
      "training: {seq_len: 512, global_batch: 32, micro_batch: 1, zero: 3}\n",
      // tp 2 x pp 2 x dp 4 on 2 nodes of 8: dp groups inside a node, stages on two nodes.
      "hardware: {node: dgx-a100, nodes: 2}\n"
      "model: {layers: 4, hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 512}\n"
      "training: {seq_len: 512, global_batch: 8, micro_batch: 1, tp: 2, pp: 2}\n",
      // tp 4 x dp 4 on 2 nodes of 8: dp groups across nodes, two tp groups per node.
      "hardware: {node: dgx-a100, nodes: 2}\n"
      "model: {layers: 2, hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 512}\n"
      "training: {seq_len: 512, global_batch: 4, micro_batch: 1, tp: 4}\n",
      // ZeRO-3 on one DGX: one GPU replayed, the gather and scatter rings of all 8
      // GPUs on their NVLink ports at once.
      "hardware: {node: dgx-a100}\n"
      "model: {layers: 2, hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 512}\n"
      "training: {seq_len: 512, global_batch: 16, micro_batch: 1, zero: 3}\n",
      // tp 4 x dp 2 on one DGX: GPU 0's dp flow from GPU 4 shares GPU 4's NVLink port
      // with the tp ring of GPUs 4-7, which no replayed GPU is part of.
      "hardware: {node: dgx-a100}\n"
      "model: {layers: 2, hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 512}\n"
      "training: {seq_len: 512, global_batch: 4, micro_batch: 1, tp: 4}\n",
      // ZeRO-Offload on 4 RTX 4090 without NVLink: collectives through the PCIe
      // switches that every rank's offload copies cross too.
      "hardware: {node: workstation-4x4090}\n"
      "model: {layers: 2, hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 512}\n"
      "training: {seq_len: 512, global_batch: 8, micro_batch: 1, zero: 2, offload: {optimizer: cpu}}\n",
  };
  for (const char* yaml : layouts) {
    ExperimentSpec spec = parse_spec(yaml, "test.yaml", "");
    OpDag dag           = build_workload(spec);
    for (const char* algorithm : {"ring", "bulk_ring", "hierarchical"}) {
      INFO(yaml << algorithm);
      // Mirrored orbits (OrbitFold.hpp) off in both: this counts what folding alone leaves out.
      ReplayOptions folded{.collective_algorithm = algorithm, .mirror_orbits = false},
          full{.collective_algorithm = algorithm, .fold_collectives = false, .mirror_orbits = false};
      RunResult a = replay_in_child(spec.cluster, dag, folded);
      RunResult b = replay_in_child(spec.cluster, dag, full);
      REQUIRE(a.ops.size() == b.ops.size());
      double worst = 0;
      for (size_t i = 0; i < a.ops.size(); ++i)
        worst = std::max(worst, std::abs(a.ops[i].end - b.ops[i].end));
      CHECK(worst <= 1e-9 * b.makespan_s);
      CHECK(a.makespan_s == Approx(b.makespan_s).epsilon(1e-12));
      CHECK(a.activities <= b.activities);
      for (const LinkResult& l : a.links) {
        INFO(l.name);
        const LinkResult* same = nullptr;
        for (const LinkResult& m : b.links)
          if (m.name == l.name)
            same = &m;
        REQUIRE(same != nullptr);
        CHECK(l.bytes == Approx(same->bytes).epsilon(1e-12));
        CHECK(l.busy_s == Approx(same->busy_s).epsilon(1e-9));
      }
    }
  }
}

TEST_CASE("a_zero3_step_on_one_node_starts_the_flows_of_its_replayed_gpu_only", "[collectives]")
{
  // dp 8 on one DGX A100, GPU 0 replayed: of each ring's 8 flows it keeps 7 -> 0 and
  // 0 -> 1, the only ones crossing the NVLink ports GPU 0's flows use; GPUs 2-6 carry
  // nothing in the outputs (they mirror GPU 0 and 1). Each of the step's collectives
  // (16 all-gathers and 8 reduce-scatters, counted from the DAG) starts 6 flows fewer.
  ExperimentSpec spec = parse_spec("hardware: {node: dgx-a100}\n"
                                   "model: {layers: 2, hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 512}\n"
                                   "training: {seq_len: 512, global_batch: 16, micro_batch: 1, zero: 3}\n",
                                   "test.yaml", "");
  OpDag dag           = build_workload(spec);
  // Mirrored orbits (OrbitFold.hpp) off in both: the unfolded rings would run as one flow.
  RunResult a = replay_in_child(spec.cluster, dag, {.collective_algorithm = "bulk_ring", .mirror_orbits = false});
  RunResult b = replay_in_child(
      spec.cluster, dag, {.collective_algorithm = "bulk_ring", .fold_collectives = false, .mirror_orbits = false});
  std::set<std::string> nvlink;
  for (const LinkResult& l : a.links)
    if (l.name.find("nvlink") != std::string::npos)
      nvlink.insert(l.name);
  CHECK(nvlink == std::set<std::string>{"node0.gpu0.nvlink.down", "node0.gpu0.nvlink.up", "node0.gpu1.nvlink.down",
                                        "node0.gpu7.nvlink.up"});
  CHECK(a.makespan_s == Approx(b.makespan_s).epsilon(1e-12));
  int64_t collectives = 0;
  for (size_t v = 0; v < dag.size(); ++v)
    collectives += dag.op(static_cast<OpId>(v)).kind == OpKind::collective;
  CHECK(collectives == 24);
  CHECK(b.activities - a.activities == 6 * collectives);
}

namespace {

// One all-reduce of `bytes` over the 8 GPUs of a catalog node, with its shipped profile.
double catalog_all_reduce(const std::string& node, double bytes)
{
  ExperimentSpec spec =
      parse_spec("hardware: {node: " + node + "}\nmodel: {preset: gpt2}\ntraining: {seq_len: 128, global_batch: 8}\n",
                 "test.yaml", "");
  OpDag dag;
  dag.add(all_reduce(dag.add_group(gpu_grid(1, 8)), bytes));
  RunResult r = replay_in_child(spec.cluster, dag, {.collective_algorithm = "auto"});
  return record(r, "allreduce").end;
}

} // namespace

TEST_CASE("nvlink_all_reduces_run_at_ncclss_measured_speed_not_line_rate", "[collectives][calibration]")
{
  // Held out of the A100 profile's fit (Vidur and LLMCompass data): ml-engineering's
  // all_reduce_perf on 8 x A100 SXM4, 512 MiB in 4218 us (busbw 222.7 GB/s) and 64 MiB
  // in 684.6 us. At NVLink line rate (300 GB/s, 1 us hops) the ring would take
  // 2 x 7/8 x 512 MiB / 300 GB/s + 14 us = 3146 us: 25 % fast.
  CHECK(catalog_all_reduce("dgx-a100", 512.0 * 1024 * 1024) == Approx(4218e-6).epsilon(0.10));
  CHECK(catalog_all_reduce("dgx-a100", 64.0 * 1024 * 1024) == Approx(684.6e-6).epsilon(0.10));
  // 8 x H100: nccl-tests reaches ~370 GB/s bus bandwidth of NVLink 4's 450 GB/s line rate
  // (NVIDIA/nccl-tests issue 212) at large sizes: 1 GiB takes 2(n-1)/n S / busbw.
  const double S = 1024.0 * 1024 * 1024;
  CHECK(catalog_all_reduce("dgx-h100", S) == Approx(2 * 7.0 / 8 * S / 370e9).epsilon(0.05));
}

namespace {

// One pipeline send (a GPU-to-GPU copy on the p2p stream) of `bytes` from GPU 0 to GPU 1
// of a catalog node; `profile` is the spec's hardware.profile.
double catalog_pipeline_send(const std::string& node, const std::string& profile, double bytes, GpuSpec* gpu = nullptr)
{
  ExperimentSpec spec = parse_spec("hardware: {node: " + node + ", profile: " + profile +
                                       "}\nmodel: {preset: gpt2}\ntraining: {seq_len: 128, global_batch: 8}\n",
                                   "test.yaml", "");
  if (gpu)
    *gpu = spec.cluster.node.gpu;
  OpDag dag;
  const DeviceRef g0{DeviceKind::gpu, 0, 0}, g1{DeviceKind::gpu, 0, 1};
  dag.add(copy_op(g0, StreamKind::p2p, g0, g1, bytes, "send"));
  RunResult r = replay_in_child(spec.cluster, dag, {});
  return record(r, "send").end;
}

} // namespace

TEST_CASE("a_pipeline_send_inside_a_node_takes_ncclss_measured_send_recv_time", "[collectives][calibration]")
{
  // With the shipped A100 profile: the fitted send_recv curve of 2 ranks in one node
  // (Vidur's a100_dgx measurements), latency + bytes / bandwidth of the size's regime.
  const double S = 64.0 * 1024 * 1024;
  GpuSpec a100;
  double fitted = catalog_pipeline_send("dgx-a100", "catalog", S, &a100);
  REQUIRE(a100.profile);
  const CollectiveCurve* curve = a100.profile->collective("send_recv", 2, 2);
  REQUIRE(curve);
  const Regime& r = curve->curve.regime(S);
  CHECK(fitted == Approx(r.latency_s + S / r.bandwidth).epsilon(1e-6));
  // Without a profile the copy runs at the A100's NVLink line rate, 300 GB/s per direction:
  // 224 us (the route's microsecond or two of latency is inside the 2 %).
  double line = catalog_pipeline_send("dgx-a100", "none", S);
  CHECK(line == Approx(S / 300e9).epsilon(0.02));
  CHECK(fitted > 1.2 * line);
  // Held out of the fit: p2pBandwidthLatencyTest on an HGX H100 writes 371-377 GB/s one
  // way between two GPUs (NVIDIA/nccl issue 1264). 1 GiB with the shipped H100 profile:
  const double G = 1024.0 * 1024 * 1024;
  CHECK(G / catalog_pipeline_send("dgx-h100", "catalog", G) == Approx(374e9).epsilon(0.08));
}

TEST_CASE("an_ep32_decode_dispatch_and_combine_on_h800_nodes_stay_within_15_percent_of_deepeps_measurement",
          "[collectives][validation][a2a]")
{
  // DeepEP's README (low-latency kernels, H800 with one CX7 400 Gb/s NIC per GPU, the
  // DeepSeek-V3 decode setting: 128 tokens per GPU, hidden 7168, top-8, FP8 dispatch,
  // BF16 combine), EP 32 over 4 nodes: dispatch 182 us and combine 350 us with pure
  // RDMA; 155 and 273 us once its kernels use NVLink inside a node. A GPU's buffer is
  // 128 x 8 x 7168 = 7,340,032 bytes in FP8 and twice that in BF16; memwall sends the
  // 8 of 32 shares for its node over NVLink and 24 through its NIC, one all-to-all each.
  ExperimentSpec spec = parse_spec("hardware: {node: hgx-h800, nodes: 4}\nmodel: {preset: gpt2}\n"
                                   "training: {seq_len: 128, global_batch: 32}\n",
                                   "test.yaml", "");
  OpDag dag;
  int32_t ep = dag.add_group(gpu_grid(4, 8));
  const DeviceRef g0{DeviceKind::gpu, 0, 0};
  const double buffer = 128.0 * 8 * 7168;
  OpId d = dag.add(collective_op(g0, StreamKind::comm, CollectiveKind::all_to_all, ep, buffer, "dispatch"));
  dag.add(collective_op(g0, StreamKind::comm, CollectiveKind::all_to_all, ep, 2 * buffer, "combine"), {d});
  RunResult r     = replay_in_child(spec.cluster, dag, {.collective_algorithm = "auto"});
  double dispatch = record(r, "dispatch").end - record(r, "dispatch").start;
  double combine  = record(r, "combine").end - record(r, "combine").start;
  // memwall: 161 and 317 us, 12 and 9 % under the pure-RDMA kernels, 4 and 16 % over
  // the NVLink-aware ones (the NIC share is bound by the GPU's 35.2 GB/s PCIe rate).
  INFO("memwall: dispatch " << dispatch * 1e6 << " us, combine " << combine * 1e6 << " us");
  CHECK(dispatch == Approx(182e-6).epsilon(0.15));
  CHECK(combine == Approx(350e-6).epsilon(0.15));
}

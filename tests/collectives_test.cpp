// Collectives decomposed into flows, against the ring all-reduce formula
// T = 2(n-1)/n * S/B + 2(n-1) * alpha (Patarasuk & Yuan 2009; NCCL's ring).
#include "Simulation.hpp"
#include "TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

Op all_reduce(int32_t group, double bytes)
{
  return collective_op({DeviceKind::gpu, 0, 0}, StreamKind::comm, CollectiveKind::all_reduce, group, bytes, "allreduce");
}

std::vector<DeviceRef> gpus(int nodes, int per_node)
{
  std::vector<DeviceRef> v;
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < per_node; ++i)
      v.push_back({DeviceKind::gpu, n, i});
  return v;
}

} // namespace

TEST_CASE("ring_all_reduce_of_s_bytes_over_n_gpus_takes_2_n_minus_1_over_n_s_over_b_plus_latencies", "[collectives]")
{
  // 8 GPUs on an NVSwitch: B = 400 GB/s per direction, alpha = 2 us per hop.
  const int n = 8;
  const double S = 1e9, B = 400e9, alpha = 2e-6;
  ClusterSpec c = hand_cluster(n, GpuFabric::nvswitch, 2);
  for (const char* algorithm : {"ring", "bulk_ring", "auto"}) {
    OpDag dag;
    dag.add(all_reduce(dag.add_group(gpus(1, n)), S));
    RunResult r = replay_in_child(c, dag, {algorithm, true});
    double expected = 2.0 * (n - 1) / n * S / B + 2 * (n - 1) * alpha; // 4.375 ms + 28 us
    INFO(algorithm);
    CHECK(record(r, "allreduce").end == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("hierarchical_all_reduce_scatters_in_node_reduces_per_rail_and_gathers_in_node", "[collectives]")
{
  // 2 nodes x 2 GPUs, NVLink 400 GB/s (2 us per hop) inside; across, each GPU's own
  // 25 GB/s NIC (rail), route latency 1 us (pcie) + 1 (nic) + 1 (switch) + 1 (nic) + 1 (pcie).
  ClusterSpec c       = hand_cluster(2, GpuFabric::nvswitch, 2);
  c.nodes             = 2;
  c.node.nics         = 2;
  c.node.nic_bw       = 25e9;
  c.node.nic_latency_s = 2e-6;
  c.switch_latency_s  = 1e-6;
  const double S = 1e9, g = 2, N = 2;
  OpDag dag;
  dag.add(all_reduce(dag.add_group(gpus(2, 2)), S));
  RunResult r = replay_in_child(c, dag, {"hierarchical", true});
  double intra = (g - 1) * (S / g / 400e9 + 2e-6);          // reduce-scatter, then all-gather
  double inter = 5e-6 + 2 * (N - 1) / N * (S / g) / 25e9;   // bulk ring of the S/g shard per rail
  double extra_latency = (2 * (N - 1) - 1) * 5e-6;           // the ring's other step latencies
  CHECK(record(r, "allreduce").end == Approx(2 * intra + inter + extra_latency).epsilon(1e-12));
}

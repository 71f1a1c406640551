#pragma once
// NCCL's own cost model of a collective: the latency and bandwidth it gives every
// (algorithm, protocol) and the choice of the cheapest, as src/graph/tuning.cc
// (ncclTopoTuneModel, ncclTopoGetAlgoTime) and src/enqueue.cc (updateCollCostTable) of
// NCCL v2.23.4-1 compute them; its constant tables are unchanged through 2.27
// (calibration/research/nccl-tuning-model.md). Time of a call in NCCL's words:
//   time = latency + bytes / algorithm bandwidth,
// where the latency grows with the ring's steps (linear in ranks) or a tree's depth
// (log2 of nodes), and the bandwidth is the topology search's channels x per-channel
// bandwidth, cut per protocol (LL half, LL128 0.92) and converted from bus to
// algorithm bandwidth. CollNet (SHARP), which needs a network plugin and
// NCCL_COLLNET_ENABLE=1, is not modelled.
#include "workloads/dag/Op.hpp"

#include <optional>
#include <vector>

namespace memwall {

enum class NcclAlgo : uint8_t { tree, ring, nvls, nvls_tree, pat };
enum class NcclProto : uint8_t { ll, ll128, simple };
const char* nccl_algo_name(NcclAlgo a);
const char* nccl_proto_name(NcclProto p);

// A topology graph as NCCL's search leaves it: channels and per-channel bandwidth (GB/s)
// inside a node and across nodes.
struct NcclGraph {
  int channels    = 0; // 0: the algorithm has no graph (NVLS without NVLink SHARP)
  double bw_intra = 0;
  double bw_inter = 0;
};

// What NCCL knows of a communicator.
struct NcclComm {
  int ranks              = 1;
  int nodes              = 1;
  int compute_capability = 90;   // every rank's GPU (NCCL takes the minimum)
  bool nvlink            = true; // ranks of a node reach each other over NVLink, else PCIe
  int runtime_channels   = 16;   // comm->nChannels: the ring plateau's threshold
  NcclGraph ring, tree, nvls;    // PAT runs on the tree graph
  // The tree graph fell back from a balanced tree to a simple one (the search does on
  // sm90 across nodes): tuning.cc takes 15 % off its bandwidth.
  bool simple_tree       = false;
  double net_overhead_us = 1.0;   // NCCL_NET_OVERHEAD's default on an Intel host (2.0 on AMD)
  bool amd_cpu           = false; // llMaxBws' row on several nodes
  double ppn() const { return static_cast<double>(ranks) / nodes; }
};

struct NcclCost {
  NcclAlgo algo    = NcclAlgo::ring;
  NcclProto proto  = NcclProto::simple;
  double latency_s = 0; // the latency term, with the ring's plateau where it applies
  double bandwidth = 0; // algorithm bandwidth, bytes/s, with the tree's size correction
  double time_s    = 0; // latency_s + bytes / bandwidth
};

// The cost NCCL's model gives one (algorithm, protocol) for `bytes` (nccl-tests' size:
// the buffer of an all-reduce, the whole gathered or scattered buffer otherwise);
// nothing when it is not enabled for this collective and communicator.
std::optional<NcclCost> nccl_cost(const NcclComm& c, CollectiveKind kind, NcclAlgo a, NcclProto p, double bytes);
// Every enabled cost, and the one NCCL picks: the least time.
std::vector<NcclCost> nccl_costs(const NcclComm& c, CollectiveKind kind, double bytes);
NcclCost nccl_choice(const NcclComm& c, CollectiveKind kind, double bytes);
// nccl-tests' bus bandwidth of a call of `bytes` that took `seconds` (doc/PERFORMANCE.md):
// algorithm bandwidth times 2(n-1)/n for an all-reduce, (n-1)/n for a gather or scatter.
double nccl_bus_bandwidth(CollectiveKind kind, int ranks, double bytes, double seconds);

} // namespace memwall

// NCCL's tuning model (NcclTuning.hpp). Every constant is tuning.cc's at v2.23.4-1,
// named as there; the line references are to that file.
#include "sim/collective/NcclTuning.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {
namespace {

constexpr int algos  = 5;
constexpr int protos = 3;
enum Hw { nvlink_hw, pci_hw, net_hw };

// baseLat[algo][proto], us (the rows of Tree and Ring; NVLS, NVLS tree and PAT are 0).
constexpr double base_lat[algos][protos] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
// hwLat[NVLINK|PCI|NET][algo][proto], us (PAT's row is not written in tuning.cc: 0).
constexpr double hw_lat[3][algos][protos] = {
    {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}, {0, 0, 0}},
};
// Per-architecture caps, GB/s; rows Volta, Ampere, Hopper (the LL row on several nodes is
// the CPU's: Intel, AMD); columns one node, two nodes, more.
constexpr double ll_max_bws[3][3]                = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}};
constexpr double per_ch_max_ring_ll128_bws[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double per_ch_max_tree_ll128_bws[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double per_ch_max_tree_bws[3][3]       = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
// treeCorrectionFactor[proto][log2(bytes / 64)]: the tree's measured shortfall per size.
constexpr double tree_correction[protos][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

int log2i(double x) { return x >= 1 ? static_cast<int>(std::floor(std::log2(x))) : -1; }

const NcclGraph& graph_of(const NcclComm& c, NcclAlgo a)
{
  switch (a) {
    case NcclAlgo::ring: return c.ring;
    case NcclAlgo::nvls:
    case NcclAlgo::nvls_tree: return c.nvls;
    default: return c.tree;
  }
}

// Whether the model holds (a, p) for this collective and communicator: tuning.cc's loop
// guards (l. 166-179), the enable rules (l. 300-345) and updateCollCostTable's.
bool enabled(const NcclComm& c, CollectiveKind kind, NcclAlgo a, NcclProto p)
{
  bool gather = kind == CollectiveKind::all_gather || kind == CollectiveKind::reduce_scatter;
  if (kind != CollectiveKind::all_reduce && !gather)
    return false;
  if (gather && a != NcclAlgo::ring && a != NcclAlgo::pat && a != NcclAlgo::nvls)
    return false;
  if (kind == CollectiveKind::all_reduce && a == NcclAlgo::pat)
    return false;
  if ((a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree || a == NcclAlgo::pat) && p != NcclProto::simple)
    return false;
  if (a == NcclAlgo::pat && c.nodes != c.ranks) // ncclPatEnable: one GPU per node
    return false;
  if (a == NcclAlgo::nvls_tree && c.nodes == 1)
    return false;
  if (a == NcclAlgo::nvls && c.nodes > 1) // multi-node NVLS needs CollNet
    return false;
  if (graph_of(c, a).channels <= 0)
    return false;
  if (p == NcclProto::ll128) { // on by default on sm70, sm80 and sm90 over NVLink only
    int cc = c.compute_capability;
    if (!c.nvlink || (cc != 70 && cc != 80 && cc != 90))
      return false;
  }
  return true;
}

} // namespace

const char* nccl_algo_name(NcclAlgo a)
{
  static const char* names[] = {"Tree", "Ring", "NVLS", "NVLSTree", "PAT"};
  return names[static_cast<int>(a)];
}

const char* nccl_proto_name(NcclProto p)
{
  static const char* names[] = {"LL", "LL128", "Simple"};
  return names[static_cast<int>(p)];
}

std::optional<NcclCost> nccl_cost(const NcclComm& c, CollectiveKind kind, NcclAlgo algo, NcclProto proto, double bytes)
{
  if (c.ranks < 2 || !enabled(c, kind, algo, proto))
    return std::nullopt;
  const int a = static_cast<int>(algo), p = static_cast<int>(proto);
  const int n = c.ranks, nodes = c.nodes;
  const bool all_reduce = kind == CollectiveKind::all_reduce;
  const int arch        = c.compute_capability >= 90 ? 2 : c.compute_capability >= 80 ? 1 : 0;
  const int index2      = nodes <= 2 ? nodes - 1 : 2;
  const double ll_max   = ll_max_bws[nodes == 1 ? arch : (c.amd_cpu ? 1 : 0)][index2];
  const double ppn      = c.ppn();
  const int nsteps      = all_reduce ? 2 * (n - 1) : n - 1;

  // Bandwidth (l. 180-240): the graph's channels x per-channel bandwidth, refined.
  const NcclGraph& g = graph_of(c, algo);
  double bw          = nodes <= 2 ? g.bw_intra : g.bw_inter;
  if (algo == NcclAlgo::nvls)
    bw = std::min(g.bw_intra, g.bw_inter);
  if (algo == NcclAlgo::nvls_tree)
    bw = std::min(g.bw_intra, nodes <= 2 ? g.bw_inter : g.bw_inter / 2);
  double bus = g.channels * bw;
  if (algo == NcclAlgo::ring && proto == NcclProto::ll)
    bus = std::min(ll_max, bus * .5);
  if (algo == NcclAlgo::ring && proto == NcclProto::ll128)
    bus = std::min(bus * 0.92, g.channels * per_ch_max_ring_ll128_bws[arch][index2]);
  if (algo == NcclAlgo::tree && all_reduce)
    bus = std::min(bus * .92, g.channels * per_ch_max_tree_bws[arch][index2]);
  if (algo == NcclAlgo::tree && proto == NcclProto::ll)
    bus = std::min(bus / 3.8, ll_max);
  if (algo == NcclAlgo::tree && proto == NcclProto::ll128)
    bus =
        std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.channels * per_ch_max_tree_ll128_bws[arch][index2]);
  if (algo == NcclAlgo::tree && c.simple_tree)
    bus *= .85;
  if (algo == NcclAlgo::pat)
    bus *= .85;
  double alg = bus; // a gather or scatter other than the ring's keeps its bus figure
  if (!(algo != NcclAlgo::ring && !all_reduce))
    alg = bus * (algo == NcclAlgo::ring                                  ? static_cast<double>(n) / nsteps
                 : algo == NcclAlgo::nvls || algo == NcclAlgo::nvls_tree ? 5.0 / 6.0
                                                                         : .5);

  // Latency (l. 245-290), us. latencyInter is 0 for NCCL's own IB and socket transports.
  double lat        = base_lat[a][p];
  const Hw intra_hw = c.nvlink ? nvlink_hw : pci_hw;
  double intra_lat  = hw_lat[intra_hw][a][p];
  double inter_lat  = ppn == 1 ? hw_lat[net_hw][static_cast<int>(NcclAlgo::tree)][p] : hw_lat[net_hw][a][p];
  switch (algo) {
    case NcclAlgo::ring: {
      double net_overhead = nodes > 1 ? c.net_overhead_us * (proto == NcclProto::simple ? 3 : 1) : 0;
      intra_lat           = std::max(intra_lat, net_overhead);
      int inter_steps     = nodes == 1 ? 0 : all_reduce ? 2 * (nodes - 1) : nodes - 1;
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      break;
    }
    case NcclAlgo::tree: lat += 2 * ((n / nodes - 1) * intra_lat + log2i(nodes) * inter_lat); break;
    case NcclAlgo::nvls: lat = intra_lat + (nodes > 1 ? inter_lat : 0); break;
    case NcclAlgo::nvls_tree: lat += intra_lat + 2 * log2i(nodes) * inter_lat; break;
    case NcclAlgo::pat: lat = 8 + log2i(nodes) * (inter_lat / 3.5) + n * 2.8; break;
  }

  // ncclTopoGetAlgoTime (l. 441-466): the tree's size correction, the ring's plateau.
  int log_size = log2i(std::floor(bytes / 64));
  if (algo == NcclAlgo::tree && all_reduce && log_size >= 0 && log_size < 23)
    alg *= tree_correction[p][log_size];
  if (algo == NcclAlgo::ring && proto == NcclProto::simple && nodes > 1 && all_reduce &&
      bytes / (static_cast<double>(c.runtime_channels) * n) >= 64)
    lat *= c.compute_capability < 80 ? 1.9 : 1.4;
  if (alg <= 0)
    return std::nullopt;
  NcclCost cost;
  cost.algo      = algo;
  cost.proto     = proto;
  cost.latency_s = lat * 1e-6;
  cost.bandwidth = alg * 1e9;
  cost.time_s    = cost.latency_s + bytes / cost.bandwidth;
  return cost;
}

std::vector<NcclCost> nccl_costs(const NcclComm& c, CollectiveKind kind, double bytes)
{
  std::vector<NcclCost> out;
  for (int a = 0; a < algos; ++a)
    for (int p = 0; p < protos; ++p)
      if (auto cost = nccl_cost(c, kind, static_cast<NcclAlgo>(a), static_cast<NcclProto>(p), bytes))
        out.push_back(*cost);
  return out;
}

NcclCost nccl_choice(const NcclComm& c, CollectiveKind kind, double bytes)
{
  // topoGetAlgoInfo walks algorithms, then protocols, and keeps the first strict minimum.
  std::vector<NcclCost> all = nccl_costs(c, kind, bytes);
  NcclCost best;
  best.time_s = -1;
  for (const NcclCost& cost : all)
    if (best.time_s < 0 || cost.time_s < best.time_s)
      best = cost;
  return best;
}

double nccl_bus_bandwidth(CollectiveKind kind, int ranks, double bytes, double seconds)
{
  double factor = kind == CollectiveKind::all_reduce ? 2.0 * (ranks - 1) / ranks : (ranks - 1.0) / ranks;
  return bytes / seconds * factor;
}

} // namespace memwall

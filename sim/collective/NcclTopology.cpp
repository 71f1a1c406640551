// What NCCL's search finds on memwall's hardware (NcclTopology.hpp), from
// src/graph/search.cc, topo.cc and connect.cc of v2.23.4-1; the DGX H100 figures were
// checked by running that search code on a DGX H100 topology
// (calibration/research/nccl-tuning-model.md).
#include "sim/collective/NcclTopology.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace memwall {
namespace {

// The bandwidths the search tries, GB/s per channel, highest first (search.cc).
const std::vector<double> speeds_intra      = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
const std::vector<double> speeds_inter      = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                               7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
const std::vector<double> sm90_speeds_intra = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
const std::vector<double> sm90_speeds_inter = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                               15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

// The highest speed the search tries that a path of `bw` carries.
double fitting_speed(const std::vector<double>& speeds, double bw)
{
  for (double s : speeds)
    if (s <= bw)
      return s;
  return speeds.back();
}

// The ring and tree graphs' most channels (init.cc: MAXCHANNELS / 2).
constexpr int max_graph_channels = 16;

// ncclTopoDupChannels: a graph of few fast channels is run as up to twice as many, each
// at its share of the bandwidth.
void dup_channels(NcclGraph& g, int cc)
{
  if (g.channels == 0 || g.bw_intra < 25.0 || (cc > 80 && g.bw_intra < 50.0 && g.channels > 4))
    return;
  int dup    = std::min(2 * g.channels, max_graph_channels);
  int div    = (dup + g.channels - 1) / g.channels;
  g.channels = dup;
  g.bw_intra /= div;
  g.bw_inter /= div;
}

// NCCL's figure for a GPU's NVLinks, GB/s per direction (topo.h, v2.23): its links (the
// line rate over 25 GB/s a link, 50 on NVLink 5, 14.06 on sm86's bridge) at 20.6 GB/s on
// sm90 and later, 12.0 on sm86, 20.0 before.
double nccl_nvlink_bw(const GpuSpec& g)
{
  const int cc       = g.compute_capability;
  const double line  = cc >= 100 ? 50.0 : cc == 86 ? 14.0625 : 25.0;
  const double count = cc >= 90 ? 20.6 : cc == 86 ? 12.0 : 20.0;
  return g.nvlink_bw / 1e9 / line * count;
}

} // namespace

double nccl_pci_bw(int gen, int lanes)
{
  static const double gts[] = {2.5, 5, 8, 16, 32, 64, 128}; // GT/s of Gen1..Gen7
  int i                     = std::clamp(gen, 1, 7) - 1;
  return lanes * gts[i] * 3.0 / 32.0;
}

NcclComm nccl_comm(const ClusterSpec& cluster, const std::vector<DeviceRef>& group)
{
  const NodeSpec& node = cluster.node;
  NcclComm c;
  c.ranks = static_cast<int>(group.size());
  std::map<int, std::vector<int>> by_node; // node -> local indices
  for (const DeviceRef& d : group)
    by_node[d.node].push_back(d.index);
  c.nodes                       = static_cast<int>(by_node.size());
  const int cc                  = node.gpu.compute_capability;
  c.compute_capability          = cc;
  c.nvlink                      = gpu_links(node.fabric);
  const std::vector<int>& local = by_node.begin()->second;
  const int ppn                 = static_cast<int>(local.size());
  const bool sm90               = cc >= 90;
  const double pci              = nccl_pci_bw(node.gpu.pcie_gen, node.gpu.pcie_lanes);
  const double nvlink           = nccl_nvlink_bw(node.gpu);
  const double path             = std::min(node.nic_bw / 1e9, pci);
  std::set<int> nics; // the NICs beside the group's GPUs of a node
  for (int i : local)
    nics.insert(std::max(0, node.nic_of_gpu(i)));

  if (c.nodes == 1) {
    // Rings over NVLink: as many channels of the fastest speed as the GPU's links carry,
    // then duplicated (12 x 30 GB/s on a DGX H100, 12 x 20 on a DGX A100).
    if (c.nvlink && nvlink > 0) {
      c.ring.bw_intra = c.ring.bw_inter = fitting_speed(sm90 ? sm90_speeds_intra : speeds_intra, nvlink);
      c.ring.channels                   = std::clamp(static_cast<int>(nvlink / c.ring.bw_intra), 1, max_graph_channels);
      dup_channels(c.ring, cc);
    }
    c.tree = c.ring;
  } else {
    // Rings across nodes: a channel on each NIC the node's ranks sit beside (a channel
    // leaving through another GPU's NIC would cross the CPU), at a speed the GPU -> PCIe
    // -> NIC path carries, and, where several of the group's GPUs share the node, no more
    // than a GPU's NVLinks (or its PCIe link) carry: a channel crosses the node over
    // ppn - 1 of its GPUs' ports, so channels x speed x (ppn - 1) / ppn fit in one GPU's
    // (8 x 48 GB/s in a DGX H100's 370.8). Of the speeds the search tries, the one of most
    // bandwidth in all; duplicated where few and fast. The tree graph has the ring's channels, and falls back to a simple tree on
    // sm90 or with one GPU a node ("Try a simpler tree"; search.cc).
    const int most     = std::min(static_cast<int>(nics.size()), max_graph_channels);
    const double inner = c.nvlink ? nvlink : pci;
    for (double speed : sm90 ? sm90_speeds_inter : speeds_inter) {
      if (speed > path)
        continue;
      int fit = ppn > 1 ? std::min(most, static_cast<int>(inner / (speed * (ppn - 1) / ppn))) : most;
      if (fit * speed > c.ring.channels * c.ring.bw_inter) {
        c.ring.channels = fit;
        c.ring.bw_inter = c.ring.bw_intra = speed;
      }
    }
    dup_channels(c.ring, cc);
    c.tree        = c.ring;
    c.simple_tree = sm90 || ppn == 1;
  }
  // NVLink SHARP (NVSwitch of sm90 and later, more than two of the group's GPUs a node):
  // a channel per GPU, each GPU's NVLinks carrying every channel and its own once more as
  // head (8 x 40 GB/s on a DGX H100); across nodes a head reaches its NIC, one a NIC.
  if (cluster.nvls && node.fabric == GpuFabric::nvswitch && sm90 && ppn > 2) {
    c.nvls.channels = c.nodes > 1 ? std::min(ppn, static_cast<int>(nics.size())) : ppn;
    c.nvls.bw_intra = fitting_speed(sm90_speeds_intra, nvlink / (ppn + 1));
    c.nvls.bw_inter = c.nodes > 1 ? fitting_speed(sm90_speeds_inter, path) : c.nvls.bw_intra;
  }
  // comm->nChannels after ncclTopoPostset (connect.cc): the ring's doubled, doubled again
  // on sm90 across nodes below 16 where a channel carries more than 45 GB/s, and raised
  // to NVLS's 16 where NVLS runs.
  c.runtime_channels = std::min(32, 2 * std::max(1, c.ring.channels));
  if (c.nodes > 1 && sm90 && c.ring.bw_intra > 45.0 && c.runtime_channels < 16)
    c.runtime_channels = std::min(32, 2 * c.runtime_channels);
  if (c.nvls.channels > 0)
    c.runtime_channels = std::max(c.runtime_channels, 16);
  return c;
}

} // namespace memwall

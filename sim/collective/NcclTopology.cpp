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

// ncclTopoDupChannels: a graph of few fast channels is run as twice as many at half the
// bandwidth each.
void dup_channels(NcclGraph& g, int cc)
{
  if (g.channels == 0 || g.bw_intra < 25.0 || (cc > 80 && g.bw_intra < 50.0 && g.channels > 4))
    return;
  g.channels *= 2;
  g.bw_intra /= 2;
  g.bw_inter /= 2;
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
  const double nvlink           = node.gpu.nvlink_bw / 1e9 * (sm90 ? 20.6 : 20.0) / 25.0; // NCCL's NVLink figure, GB/s
  const double path             = std::min(node.nic_bw / 1e9, nccl_pci_bw(node.gpu.pcie_gen, node.gpu.pcie_lanes));

  if (c.nodes == 1) {
    // Rings over NVLink: as many channels of the fastest speed as the GPU's links carry,
    // then duplicated (12 x 30 GB/s on a DGX H100, 12 x 20 on a DGX A100).
    if (c.nvlink && nvlink > 0) {
      c.ring.bw_intra = c.ring.bw_inter = fitting_speed(sm90 ? sm90_speeds_intra : speeds_intra, nvlink);
      c.ring.channels                   = std::max(1, static_cast<int>(nvlink / c.ring.bw_intra));
      dup_channels(c.ring, cc);
    }
    c.tree = c.ring;
  } else {
    // Rings across nodes: one channel on each NIC the node's ranks sit beside (a channel
    // leaving through another GPU's NIC would cross the CPU), at the speed the GPU ->
    // PCIe -> NIC path carries, duplicated where few and fast. The tree graph has the
    // ring's channels, and on sm90 falls back to a simple tree ("Try a simpler tree").
    std::set<int> nics;
    for (int i : local)
      nics.insert(std::max(0, node.nic_of_gpu(i)));
    c.ring.channels = static_cast<int>(nics.size());
    c.ring.bw_inter = c.ring.bw_intra = fitting_speed(sm90 ? sm90_speeds_inter : speeds_inter, path);
    dup_channels(c.ring, cc);
    c.tree        = c.ring;
    c.simple_tree = sm90;
  }
  // NVLink SHARP (NVSwitch of sm90 and later, more than two of the group's GPUs a node):
  // a channel per GPU, each GPU's NVLinks carrying every channel and its own once more as
  // head (8 x 40 GB/s on a DGX H100); across nodes a head reaches its NIC.
  if (cluster.nvls && node.fabric == GpuFabric::nvswitch && sm90 && ppn > 2) {
    c.nvls.channels = ppn;
    c.nvls.bw_intra = fitting_speed(sm90_speeds_intra, nvlink / (ppn + 1));
    c.nvls.bw_inter = c.nodes > 1 ? fitting_speed(sm90_speeds_inter, path) : c.nvls.bw_intra;
  }
  // comm->nChannels after ncclTopoPostset (connect.cc): the ring's doubled, and doubled
  // again on sm90 across nodes below 16 where a channel carries more than 45 GB/s.
  c.runtime_channels = std::min(32, 2 * std::max(1, c.ring.channels));
  if (c.nodes > 1 && sm90 && c.ring.bw_intra > 45.0 && c.runtime_channels < 16)
    c.runtime_channels = std::min(32, 2 * c.runtime_channels);
  return c;
}

} // namespace memwall

#include "sim/platform/Platform.hpp"

#include "base/InputError.hpp"

#include "sim/platform/FabricZone.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>

namespace sg4 = simgrid::s4u;

namespace memwall {
namespace {

using Links = std::vector<sg4::Link*>;

Links cat(std::initializer_list<Links> parts)
{
  Links out;
  for (const auto& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

} // namespace

Platform::Platform(const ClusterSpec& cluster) : cluster_(cluster)
{
  //            [ib switch]             (or the tiers of a Clos above the nodes' switches:
  //           /     |     \        one     each group of a tier one up and one down link)
  //      node0    node1 ... nodeN-1     up/down link per node
  // All in one FabricZone: one table of routes inside a node serves every node.
  if (cluster_.nodes > 1 && cluster_.node.nics <= 0)
    throw InputError("hardware.node: a cluster of several nodes needs nics > 0 and nic_bw > 0");
  fabric_            = new FabricZone("cluster"); // the root zone: the Engine owns it
  sg4::NetZone* zone = fabric_->get_iface();
  for (int k = 0; k < timer_hosts; ++k) {
    timers_.push_back(zone->create_host(k == 0 ? "timer" : "timer" + std::to_string(k), 1.0));
    timers_.back()->set_core_count(1 << 20); // delays never share a core
  }
  nodes_.resize(cluster_.nodes);
  for (int n = 0; n < cluster_.nodes; ++n)
    create_node_links(n, zone);
  add_tiers(zone);
  fabric_->create_loopback();
  for (int n = 0; n < cluster_.nodes; ++n)
    add_hosts(n);
  describe_routes();
  zone->seal();
}

sg4::Host* Platform::host(const DeviceRef& d) const
{
  const NodeParts& p = nodes_.at(d.node);
  switch (d.kind) {
    case DeviceKind::gpu: return p.gpus.at(d.index);
    case DeviceKind::host: return p.cpus.at(d.index);
    case DeviceKind::nvme: return p.nvme;
  }
  return nullptr;
}

Platform::Duplex Platform::make_duplex(sg4::NetZone* z, const std::string& name, double up_bw, double down_bw,
                                       double latency)
{
  // Two independent links rather than a SplitDuplexLink so each direction can have its
  // own bandwidth (H2D and D2H differ on real GPUs).
  Duplex d;
  d.up   = z->create_link(name + ".up", up_bw)->set_latency(latency)->seal();
  d.down = z->create_link(name + ".down", down_bw)->set_latency(latency)->seal();
  return d;
}

void Platform::create_node_links(int n, sg4::NetZone* z)
{
  const std::string prefix = "node" + std::to_string(n) + ".";
  NodeParts& p             = nodes_[n];
  add_gpu_links(p, prefix, z);
  add_host_links(p, prefix, z);
  add_gpu_fabric(p, prefix, z);
  add_nic_links(p, prefix, z);
  if (cluster_.nodes > 1 && cluster_.node.nics > 0) { // without NICs Platform::Platform refuses the spec
    //   node ──(node.ib.up: NICs x bandwidth / oversubscription)──► [ib switch]
    const NodeSpec& node = cluster_.node;
    double share         = node.nics * node.nic_bw / cluster_.oversubscription;
    p.ib = make_duplex(z, "node" + std::to_string(n) + ".ib", share, share, cluster_.switch_latency_s / 2);
    fabric_links_.insert(p.ib.up);
    fabric_links_.insert(p.ib.down);
  }
}

void Platform::add_tiers(sg4::NetZone* z)
{
  //   group g of tier t ──(t.g.up: its nodes' NICs / oversubscription)──► [layer t+1]
  // A group link carries half the latency of the layer it leaves and half of the one it
  // reaches (NetworkTier.hpp).
  if (cluster_.nodes <= 1 || cluster_.tiers.empty())
    return;
  const NodeSpec& node = cluster_.node;
  double below         = cluster_.switch_latency_s;
  for (const NetworkTier& tier : cluster_.tiers) {
    Links ups, downs;
    for (int first = 0, g = 0; first < cluster_.nodes; first += tier.nodes, ++g) {
      int members = std::min(tier.nodes, cluster_.nodes - first);
      double bw   = members * node.nics * node.nic_bw / tier.oversubscription;
      Duplex d    = make_duplex(z, tier.name + "." + std::to_string(g), bw, bw, (below + tier.switch_latency_s) / 2);
      ups.push_back(d.up);
      downs.push_back(d.down);
      fabric_links_.insert(d.up);
      fabric_links_.insert(d.down);
    }
    fabric_->add_tier(tier.nodes, ups, downs);
    below = tier.switch_latency_s;
  }
  if (cluster_.rail_optimized) {
    std::vector<int> rails(static_cast<size_t>(gateway_place() + 1), -1);
    for (int i = 0; i < cluster_.gpus_per_node; ++i)
      rails[static_cast<size_t>(gpu_place(i))] = node.nic_of_gpu(i);
    fabric_->set_rails(rails);
  }
}

void Platform::add_hosts(int n)
{
  const std::string prefix = "node" + std::to_string(n) + ".";
  NodeParts& p             = nodes_[n];
  int node                 = fabric_->add_node(node_links(p));
  sg4::NetZone* zone       = fabric_->get_iface();
  for (int i = 0; i < cluster_.gpus_per_node; ++i) {
    p.gpus.push_back(zone->create_host(prefix + "gpu" + std::to_string(i), gpu_host_speed));
    fabric_->place(p.gpus.back(), node, gpu_place(i));
  }
  for (int s = 0; s < cluster_.node.sockets; ++s) {
    p.cpus.push_back(zone->create_host(prefix + "cpu" + std::to_string(s), cluster_.node.cpu_flops_per_socket));
    fabric_->place(p.cpus.back(), node, cpu_place(s));
  }
  p.nvme = zone->create_host(prefix + "nvme0", 1.0);
  fabric_->place(p.nvme, node, nvme_place());
}

// Every link of a node, in an order the same for every node: a route's slots.
std::vector<sg4::Link*> Platform::node_links(const NodeParts& p) const
{
  Links all = p.hbm;
  all.insert(all.end(), p.dram.begin(), p.dram.end());
  for (const std::vector<Duplex>* v : {&p.pcie, &p.uplink, &p.nvlink, &p.nic, &p.socket_link})
    for (const Duplex& d : *v) {
      all.push_back(d.up);
      all.push_back(d.down);
    }
  for (const Duplex* d : {&p.nvme_link, &p.ib})
    if (d->up) {
      all.push_back(d->up);
      all.push_back(d->down);
    }
  return all;
}

// The routes inside a node, as node 0's links name them (every node's are alike).
void Platform::describe_routes()
{
  const NodeParts& p = nodes_[0];
  fabric_->set_places(gateway_place() + 1);
  // Without an explicit self-route a GPU would cross SimGrid's 10 GB/s loopback link
  // (DESIGN.md §3): its HBM.
  for (int i = 0; i < cluster_.gpus_per_node; ++i)
    fabric_->set_route(gpu_place(i), gpu_place(i), {p.hbm[i]});
  route_gpu_pairs(p);
  route_host_memory(p);
  if (cluster_.nodes > 1) {
    route_to_gateway(p);
    fabric_->set_fabric(gateway_place(), p.ib.up, p.ib.down);
  }
}

void Platform::add_gpu_links(NodeParts& p, const std::string& prefix, sg4::NetZone* z)
{
  //   gpuI ──(hbm, shared by reads and writes)──► gpuI
  //     │ pcie.up = D2H, pcie.down = H2D (the GPU's own x16 link to its switch)
  const GpuSpec& g = cluster_.node.gpu;
  for (int i = 0; i < cluster_.gpus_per_node; ++i) {
    std::string name = prefix + "gpu" + std::to_string(i);
    // The kernel overhead sits on the HBM route as latency so that a kernel, which is an
    // Exec of (F/P + overhead) beside an HBM flow of (overhead + B/W), lasts
    // overhead + max(F/P, B/W).
    sg4::Link* hbm = z->create_link(name + ".hbm", g.hbm_achievable_bw)->set_latency(g.kernel_overhead_s)->seal();
    p.hbm.push_back(hbm);
    p.pcie.push_back(make_duplex(z, name + ".pcie", g.d2h_bw, g.h2d_bw, cluster_.node.pcie_latency_s));
  }
}

void Platform::add_host_links(NodeParts& p, const std::string& prefix, sg4::NetZone* z)
{
  //   cpuS ──(dram S, shared)        cpu0 ◄──socket link──► cpu1
  //   pcie switch K ══uplink══► its socket        nvme ══read/write══► cpu0
  const NodeSpec& node = cluster_.node;
  for (int s = 0; s < node.sockets; ++s) {
    std::string name = prefix + "cpu" + std::to_string(s);
    sg4::Link* dram  = z->create_link(name + ".dram", node.dram_bw_per_socket)->seal();
    p.dram.push_back(dram);
    p.socket_link.push_back(make_duplex(z, name + ".xlink", node.socket_link_bw, node.socket_link_bw, 0));
  }
  int switches = (cluster_.gpus_per_node + node.gpus_per_pcie_switch - 1) / node.gpus_per_pcie_switch;
  for (int k = 0; k < switches; ++k)
    p.uplink.push_back(make_duplex(z, prefix + "pcieswitch" + std::to_string(k) + ".uplink", node.pcie_uplink_bw,
                                   node.pcie_uplink_bw, 0));
  double read  = node.nvme_read_bw > 0 ? node.nvme_read_bw : 1e-3; // absent drive: unusable, not free
  double write = node.nvme_write_bw > 0 ? node.nvme_write_bw : 1e-3;
  p.nvme_link  = make_duplex(z, prefix + "nvme0.io", read, write, 20e-6);
}

void Platform::add_gpu_fabric(NodeParts& p, const std::string& prefix, sg4::NetZone* z)
{
  //   gpuI ──nvlink.up──► [NVSwitch] ──nvlink.down──► gpuJ     (fabric: nvswitch)
  if (!gpu_links(cluster_.node.fabric))
    return;
  double half_latency = cluster_.node.nvlink_latency_s / 2;
  for (int i = 0; i < cluster_.gpus_per_node; ++i)
    p.nvlink.push_back(make_duplex(z, prefix + "gpu" + std::to_string(i) + ".nvlink", cluster_.node.gpu.nvlink_bw,
                                   cluster_.node.gpu.nvlink_bw, half_latency));
}

void Platform::add_nic_links(NodeParts& p, const std::string& prefix, sg4::NetZone* z)
{
  //   gpuI ──pcie──► [switch] ──► nicK ──► (ib router of the node)     GPUDirect RDMA
  if (cluster_.nodes <= 1 || cluster_.node.nics <= 0)
    return;
  const NodeSpec& node = cluster_.node;
  for (int k = 0; k < node.nics; ++k)
    p.nic.push_back(
        make_duplex(z, prefix + "nic" + std::to_string(k), node.nic_bw, node.nic_bw, node.nic_latency_s / 2));
}

std::vector<sg4::Link*> Platform::socket_hop(const NodeParts& p, int from, int to) const
{
  if (from == to)
    return {};
  return {p.socket_link[from].up, p.socket_link[to].down};
}

void Platform::route_gpu_pairs(const NodeParts& p)
{
  const NodeSpec& node = cluster_.node;
  for (int i = 0; i < cluster_.gpus_per_node; ++i) {
    for (int j = 0; j < cluster_.gpus_per_node; ++j) {
      if (i == j)
        continue;
      if (gpu_links(node.fabric)) {
        fabric_->set_route(gpu_place(i), gpu_place(j), {p.nvlink[i].up, p.nvlink[j].down});
        continue;
      }
      // No peer-to-peer: the copy is staged through the source socket's DRAM.
      int si = node.socket_of_gpu(i);
      int sj = node.socket_of_gpu(j);
      fabric_->set_route(gpu_place(i), gpu_place(j),
                         cat({{p.pcie[i].up, p.uplink[node.pcie_switch_of_gpu(i)].up, p.dram[si]},
                              socket_hop(p, si, sj),
                              {p.uplink[node.pcie_switch_of_gpu(j)].down, p.pcie[j].down}}));
    }
  }
}

void Platform::route_host_memory(const NodeParts& p)
{
  const NodeSpec& node = cluster_.node;
  for (int s = 0; s < node.sockets; ++s) {
    for (int i = 0; i < cluster_.gpus_per_node; ++i) {
      int gs = node.socket_of_gpu(i);
      int sw = node.pcie_switch_of_gpu(i);
      fabric_->set_route(cpu_place(s), gpu_place(i),
                         cat({{p.dram[s]}, socket_hop(p, s, gs), {p.uplink[sw].down, p.pcie[i].down}}));
      fabric_->set_route(gpu_place(i), cpu_place(s),
                         cat({{p.pcie[i].up, p.uplink[sw].up}, socket_hop(p, gs, s), {p.dram[s]}}));
    }
    fabric_->set_route(cpu_place(s), cpu_place(s), {p.dram[s]});
    for (int t = 0; t < node.sockets; ++t)
      if (t != s)
        fabric_->set_route(cpu_place(s), cpu_place(t), cat({{p.dram[s]}, socket_hop(p, s, t), {p.dram[t]}}));
    // The NVMe drives hang off socket 0.
    fabric_->set_route(nvme_place(), cpu_place(s), cat({{p.nvme_link.up}, socket_hop(p, 0, s), {p.dram[s]}}));
    fabric_->set_route(cpu_place(s), nvme_place(), cat({{p.dram[s]}, socket_hop(p, s, 0), {p.nvme_link.down}}));
  }
}

// GPUDirect RDMA: a GPU reaches the fabric through its PCIe link and its NIC.
void Platform::route_to_gateway(const NodeParts& p)
{
  for (int i = 0; i < cluster_.gpus_per_node; ++i) {
    int k = cluster_.node.nic_of_gpu(i);
    fabric_->set_route(gpu_place(i), gateway_place(), {p.pcie[i].up, p.nic[k].up});
    fabric_->set_route(gateway_place(), gpu_place(i), {p.nic[k].down, p.pcie[i].down});
  }
}

} // namespace memwall

#include "hwmodels/Platform.hpp"

#include "base/InputError.hpp"

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

namespace sg4 = simgrid::s4u;

namespace memwall {
namespace {

using Links = std::vector<sg4::Link*>;

void route(sg4::NetZone* z, sg4::Host* a, sg4::Host* b, const Links& links)
{
  std::vector<sg4::LinkInRoute> in_route(links.begin(), links.end());
  z->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, in_route, false);
}

Links cat(std::initializer_list<Links> parts)
{
  Links out;
  for (const auto& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

} // namespace

void configure_exact_engine()
{
  // Without these, LV08's corrections add 3 % to every transfer, cross-traffic slows
  // opposite flows by 5 % and TCP-gamma caps fast links (measured, DESIGN.md §3).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  // The default lazy update of 3.32 lets a flow escape a link's bound once the latency
  // phase of a concurrent flow ends: two 1 GB copies over two 25 GB/s links sharing a
  // 400 GB/s DRAM link finished at 40 ms and 2.7 ms instead of 40 ms each (measured on
  // 3.32 with 1 us link latencies). Full update is exact.
  sg4::Engine::set_config("network/optim:Full");
}

Platform::Platform(const ClusterSpec& cluster) : cluster_(cluster)
{
  //            [ib switch: star zone "cluster"]
  //           /          |            \        one up/down link per node
  //      node0          node1   ...   nodeN-1   (full zones, see build_node)
  auto* star = sg4::create_star_zone("cluster");
  // Made before the nodes are attached: a host's name is checked against every zone.
  for (int k = 0; k < timer_hosts; ++k) {
    timers_.push_back(star->create_host(k == 0 ? "timer" : "timer" + std::to_string(k), 1.0));
    timers_.back()->set_core_count(1 << 20); // delays never share a core
  }
  nodes_.resize(cluster_.nodes);
  for (int n = 0; n < cluster_.nodes; ++n)
    create_node_links(n, star);
  // Every node is built apart from the platform, then attached and sealed in turn.
  // SimGrid 3.32 checks a new host's name by walking every zone attached so far, so
  // nodes built in place cost O(nodes) each: 0.9 s of the 2.25 s a 2,048-node cluster
  // took. Sealing still walks the zones attached so far (sealing finds a zone's hosts by
  // filtering all of them), the part of the build that stays quadratic.
  for (int n = 0; n < cluster_.nodes; ++n)
    build_node(n, star);
  for (int n = 0; n < cluster_.nodes; ++n) {
    nodes_[n].zone->set_parent(star);
    nodes_[n].zone->seal();
  }
  if (cluster_.nodes > 1)
    for (int n = 0; n < cluster_.nodes; ++n)
      connect_node_to_fabric(n, star);
  star->seal();
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

double Platform::link_bandwidth(const std::string& name) const
{
  auto it = bandwidth_.find(name);
  return it == bandwidth_.end() ? 0.0 : it->second;
}

Platform::Duplex Platform::make_duplex(sg4::NetZone* z, const std::string& name, double up_bw, double down_bw,
                                       double latency)
{
  // Two independent links rather than a SplitDuplexLink so each direction can have its
  // own bandwidth (H2D and D2H differ on real GPUs).
  Duplex d;
  d.up                           = z->create_link(name + ".up", up_bw)->set_latency(latency)->seal();
  d.down                         = z->create_link(name + ".down", down_bw)->set_latency(latency)->seal();
  bandwidth_[d.up->get_name()]   = up_bw;
  bandwidth_[d.down->get_name()] = down_bw;
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
  if (cluster_.nodes > 1 && cluster_.node.nics > 0) { // without NICs connect_node_to_fabric refuses the spec
    //   node ──(node.ib.up: NICs x bandwidth / oversubscription)──► [ib switch]
    const NodeSpec& node = cluster_.node;
    double share         = node.nics * node.nic_bw / cluster_.oversubscription;
    p.ib = make_duplex(z, "node" + std::to_string(n) + ".ib", share, share, cluster_.switch_latency_s / 2);
  }
}

void Platform::build_node(int n, sg4::NetZone* parent)
{
  const std::string prefix = "node" + std::to_string(n) + ".";
  NodeParts& p             = nodes_[n];
  p.zone                   = sg4::create_full_zone("node" + std::to_string(n));
  // Not attached yet (Platform::Platform): the models it would take from its parent.
  simgrid::kernel::routing::NetZoneImpl* zone       = p.zone->get_impl();
  const simgrid::kernel::routing::NetZoneImpl* from = parent->get_impl();
  zone->set_network_model(from->get_network_model());
  zone->set_cpu_pm_model(from->get_cpu_pm_model());
  zone->set_cpu_vm_model(from->get_cpu_vm_model());
  zone->set_disk_model(from->get_disk_model());
  zone->set_host_model(from->get_host_model());
  add_gpus(p, prefix);
  add_host_side(p, prefix);
  add_nics(p, prefix);
  route_gpu_pairs(p);
  route_host_memory(p);
  if (cluster_.nodes > 1)
    route_to_gateway(p);
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
    bandwidth_[hbm->get_name()] = g.hbm_achievable_bw;
    p.hbm.push_back(hbm);
    p.pcie.push_back(make_duplex(z, name + ".pcie", g.d2h_bw, g.h2d_bw, cluster_.node.pcie_latency_s));
  }
}

void Platform::add_gpus(NodeParts& p, const std::string& prefix)
{
  for (int i = 0; i < cluster_.gpus_per_node; ++i) {
    sg4::Host* h = p.zone->create_host(prefix + "gpu" + std::to_string(i), gpu_host_speed);
    p.gpus.push_back(h);
    // Without this explicit self-route a full zone falls back to a global 10 GB/s
    // loopback link (DESIGN.md §3).
    route(p.zone, h, h, {p.hbm[i]});
  }
}

void Platform::add_host_links(NodeParts& p, const std::string& prefix, sg4::NetZone* z)
{
  //   cpuS ──(dram S, shared)        cpu0 ◄──socket link──► cpu1
  //   pcie switch K ══uplink══► its socket        nvme ══read/write══► cpu0
  const NodeSpec& node = cluster_.node;
  for (int s = 0; s < node.sockets; ++s) {
    std::string name             = prefix + "cpu" + std::to_string(s);
    sg4::Link* dram              = z->create_link(name + ".dram", node.dram_bw_per_socket)->seal();
    bandwidth_[dram->get_name()] = node.dram_bw_per_socket;
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

void Platform::add_host_side(NodeParts& p, const std::string& prefix)
{
  const NodeSpec& node = cluster_.node;
  for (int s = 0; s < node.sockets; ++s)
    p.cpus.push_back(p.zone->create_host(prefix + "cpu" + std::to_string(s), node.cpu_flops_per_socket));
  p.nvme = p.zone->create_host(prefix + "nvme0", 1.0);
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

void Platform::add_nics(NodeParts& p, const std::string& prefix)
{
  if (cluster_.nodes > 1 && cluster_.node.nics > 0)
    p.gateway = p.zone->create_router(prefix + "ib");
}

std::vector<sg4::Link*> Platform::socket_hop(const NodeParts& p, int from, int to) const
{
  if (from == to)
    return {};
  return {p.socket_link[from].up, p.socket_link[to].down};
}

void Platform::route_gpu_pairs(NodeParts& p)
{
  const NodeSpec& node = cluster_.node;
  for (int i = 0; i < cluster_.gpus_per_node; ++i) {
    for (int j = 0; j < cluster_.gpus_per_node; ++j) {
      if (i == j)
        continue;
      if (gpu_links(node.fabric)) {
        route(p.zone, p.gpus[i], p.gpus[j], {p.nvlink[i].up, p.nvlink[j].down});
        continue;
      }
      // No peer-to-peer: the copy is staged through the source socket's DRAM.
      int si = node.socket_of_gpu(i);
      int sj = node.socket_of_gpu(j);
      route(p.zone, p.gpus[i], p.gpus[j],
            cat({{p.pcie[i].up, p.uplink[node.pcie_switch_of_gpu(i)].up, p.dram[si]},
                 socket_hop(p, si, sj),
                 {p.uplink[node.pcie_switch_of_gpu(j)].down, p.pcie[j].down}}));
    }
  }
}

void Platform::route_host_memory(NodeParts& p)
{
  const NodeSpec& node = cluster_.node;
  for (int s = 0; s < node.sockets; ++s) {
    for (int i = 0; i < cluster_.gpus_per_node; ++i) {
      int gs = node.socket_of_gpu(i);
      int sw = node.pcie_switch_of_gpu(i);
      route(p.zone, p.cpus[s], p.gpus[i],
            cat({{p.dram[s]}, socket_hop(p, s, gs), {p.uplink[sw].down, p.pcie[i].down}}));
      route(p.zone, p.gpus[i], p.cpus[s], cat({{p.pcie[i].up, p.uplink[sw].up}, socket_hop(p, gs, s), {p.dram[s]}}));
    }
    route(p.zone, p.cpus[s], p.cpus[s], {p.dram[s]});
    for (int t = 0; t < node.sockets; ++t)
      if (t != s)
        route(p.zone, p.cpus[s], p.cpus[t], cat({{p.dram[s]}, socket_hop(p, s, t), {p.dram[t]}}));
    // The NVMe drives hang off socket 0.
    route(p.zone, p.nvme, p.cpus[s], cat({{p.nvme_link.up}, socket_hop(p, 0, s), {p.dram[s]}}));
    route(p.zone, p.cpus[s], p.nvme, cat({{p.dram[s]}, socket_hop(p, s, 0), {p.nvme_link.down}}));
  }
}

void Platform::route_to_gateway(NodeParts& p)
{
  if (!p.gateway)
    return;
  for (int i = 0; i < cluster_.gpus_per_node; ++i) {
    int k = cluster_.node.nic_of_gpu(i);
    std::vector<sg4::LinkInRoute> out{sg4::LinkInRoute(p.pcie[i].up), sg4::LinkInRoute(p.nic[k].up)};
    std::vector<sg4::LinkInRoute> in{sg4::LinkInRoute(p.nic[k].down), sg4::LinkInRoute(p.pcie[i].down)};
    p.zone->add_route(p.gpus[i]->get_netpoint(), p.gateway, nullptr, nullptr, out, false);
    p.zone->add_route(p.gateway, p.gpus[i]->get_netpoint(), nullptr, nullptr, in, false);
  }
}

void Platform::connect_node_to_fabric(int n, sg4::NetZone* star)
{
  NodeParts& p = nodes_[n];
  if (!p.gateway)
    throw InputError("hardware.node: a cluster of several nodes needs nics > 0 and nic_bw > 0");
  star->add_route(p.zone->get_netpoint(), nullptr, p.gateway, nullptr, {sg4::LinkInRoute(p.ib.up)}, false);
  star->add_route(nullptr, p.zone->get_netpoint(), nullptr, p.gateway, {sg4::LinkInRoute(p.ib.down)}, false);
}

} // namespace memwall

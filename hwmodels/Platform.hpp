#pragma once
// Builds the SimGrid platform of a cluster in C++ (no XML) and answers which SimGrid
// host stands for a device. One Platform per process: SimGrid has one Engine per process.
//
// Every flow the replay starts is routed over these links with SimGrid's max-min
// sharing, so contention on PCIe switch uplinks, NVLink ports, NICs, DRAM and NVMe
// emerges from the topology, not from formulas.
#include "hwmodels/ClusterSpec.hpp"
#include "hwmodels/DeviceRef.hpp"

#include <simgrid/forward.h>

#include <map>
#include <string>
#include <vector>

namespace memwall {

// The settings under which SimGrid's fluid model is exact (DESIGN.md §3). Call once,
// after the Engine is created and before any zone is.
void configure_exact_engine();

class Platform {
public:
  // Speed of every GPU host: kernels are given work = seconds x this (see Replayer).
  static constexpr double gpu_host_speed = 1e12;

  // Delays running at once on one timer host cost SimGrid an update of each of them at
  // every start and end there (the Megatron 1T step keeps ~200 coalesced runs in
  // flight): this many timers, one per stream up to it.
  static constexpr int timer_hosts = 256;

  explicit Platform(const ClusterSpec& cluster);

  const ClusterSpec& cluster() const { return cluster_; }
  simgrid::s4u::Host* host(const DeviceRef& d) const;
  // Hosts with many cores that run pure delays (latency terms, coalesced runs) without
  // sharing. SimGrid updates every action of a host's CPU whenever one starts or ends
  // there, so delays are spread over several (`slot`: the caller's stream, say).
  simgrid::s4u::Host* timer(size_t slot) const { return timers_[slot % timers_.size()]; }
  // Nominal bandwidth of a link by SimGrid name, for utilization figures.
  double link_bandwidth(const std::string& name) const;

private:
  struct Duplex {
    simgrid::s4u::Link* up   = nullptr; // away from the GPU / toward the CPU or fabric
    simgrid::s4u::Link* down = nullptr; // toward the GPU
  };
  struct NodeParts {
    simgrid::s4u::NetZone* zone = nullptr;
    std::vector<simgrid::s4u::Host*> gpus, cpus;
    simgrid::s4u::Host* nvme                    = nullptr;
    simgrid::kernel::routing::NetPoint* gateway = nullptr;
    std::vector<simgrid::s4u::Link*> hbm, dram;
    std::vector<Duplex> pcie, uplink, nvlink, nic, socket_link;
    Duplex nvme_link, ib;
  };

  // Links first, all in the top zone, then the node zones with their hosts and routes:
  // SimGrid checks a new link's name against every zone of the platform, so links made
  // after N node zones cost N lookups each (quadratic in nodes).
  void create_node_links(int n, simgrid::s4u::NetZone* z);
  void build_node(int n, simgrid::s4u::NetZone* parent);
  void add_gpus(NodeParts& p, const std::string& prefix);
  void add_host_side(NodeParts& p, const std::string& prefix);
  void add_gpu_links(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_host_links(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_gpu_fabric(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_nic_links(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_nics(NodeParts& p, const std::string& prefix);
  void route_gpu_pairs(NodeParts& p);
  void route_host_memory(NodeParts& p);
  void route_to_gateway(NodeParts& p);
  void connect_node_to_fabric(int n, simgrid::s4u::NetZone* star);
  Duplex make_duplex(simgrid::s4u::NetZone* z, const std::string& name, double up_bw, double down_bw, double latency);
  std::vector<simgrid::s4u::Link*> socket_hop(const NodeParts& p, int from, int to) const;

  ClusterSpec cluster_;
  std::vector<NodeParts> nodes_;
  std::vector<simgrid::s4u::Host*> timers_;
  std::map<std::string, double> bandwidth_;
};

} // namespace memwall

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

#include <string>
#include <unordered_set>
#include <vector>

namespace memwall {

class FabricZone;

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
  // A link of the scale-out fabric beyond the NICs: a node's share of its switch, a
  // tier's group links. NCCL's tuning model prices a non-blocking fabric; these are
  // where a real one is narrower.
  bool is_fabric_link(const simgrid::s4u::Link* link) const { return fabric_links_.count(link) > 0; }

private:
  struct Duplex {
    simgrid::s4u::Link* up   = nullptr; // away from the GPU / toward the CPU or fabric
    simgrid::s4u::Link* down = nullptr; // toward the GPU
  };
  struct NodeParts {
    std::vector<simgrid::s4u::Host*> gpus, cpus;
    simgrid::s4u::Host* nvme = nullptr;
    std::vector<simgrid::s4u::Link*> hbm, dram;
    std::vector<Duplex> pcie, uplink, nvlink, nic, socket_link;
    Duplex nvme_link, ib;
  };

  // Every node's links, then every node's hosts, then the routes inside a node: one
  // table of places for all nodes (FabricZone).
  void create_node_links(int n, simgrid::s4u::NetZone* z);
  void add_hosts(int n);
  void add_gpu_links(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_host_links(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_gpu_fabric(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_nic_links(NodeParts& p, const std::string& prefix, simgrid::s4u::NetZone* z);
  void add_tiers(simgrid::s4u::NetZone* z);
  std::vector<simgrid::s4u::Link*> node_links(const NodeParts& p) const;
  int gpu_place(int i) const { return i; }
  int cpu_place(int s) const { return cluster_.gpus_per_node + s; }
  int nvme_place() const { return cluster_.gpus_per_node + cluster_.node.sockets; }
  int gateway_place() const { return nvme_place() + 1; }
  void describe_routes();
  void route_gpu_pairs(const NodeParts& p);
  void route_host_memory(const NodeParts& p);
  void route_to_gateway(const NodeParts& p);
  Duplex make_duplex(simgrid::s4u::NetZone* z, const std::string& name, double up_bw, double down_bw, double latency);
  std::vector<simgrid::s4u::Link*> socket_hop(const NodeParts& p, int from, int to) const;

  ClusterSpec cluster_;
  FabricZone* fabric_ = nullptr;
  std::vector<NodeParts> nodes_;
  std::vector<simgrid::s4u::Host*> timers_;
  std::unordered_set<const simgrid::s4u::Link*> fabric_links_;
};

} // namespace memwall

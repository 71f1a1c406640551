#pragma once
// One server: its GPUs, how they connect to each other, to the CPU sockets, to the
// NICs and to local NVMe. Each figure is declared once below with its spec key, unit,
// default and meaning, as GpuSpec's are; the struct and the catalog reader (read_node)
// both expand the lists. Values are SI (bytes, bytes/s, FLOP/s, seconds, USD).
#include "hwmodels/GpuSpec.hpp"

#include <string>

// X(key, unit, description): required in a catalog entry.
#define MEMWALL_NODE_REQUIRED_QUANTITIES(X) X(dram_bytes, bytes, "host memory of the node")
// X(key, unit, default, description)
#define MEMWALL_NODE_QUANTITIES(X)                                                                                     \
  X(nvlink_latency_s, seconds, 1e-6, "NVLink hop latency")                                                             \
  X(cpu_flops_per_socket, flop_rate, 1e12, "fp32 peak per socket")                                                     \
  X(dram_bw_per_socket, rate, 100e9, "achievable DRAM bandwidth per socket")                                           \
  /* A copy between pageable host memory and a GPU goes through the driver's pinned */                                 \
  /* staging buffer: one CPU thread's memcpy, pipelined with the DMA, at this rate.  */                                \
  X(pageable_copy_bw, rate, 10.7e9,                                                                                    \
    "one copy's staging memcpy between pageable host memory and the driver's pinned "                                  \
    "buffer (default: an RTX 3050 host's 10.7 GB/s pageable against 13.0 pinned)")                                     \
  X(socket_link_bw, rate, 50e9, "inter-socket bandwidth per direction")                                                \
  X(pcie_uplink_bw, rate, 25e9, "PCIe switch uplink bandwidth per direction")                                          \
  X(pcie_latency_s, seconds, 1e-6, "PCIe hop latency")                                                                 \
  X(nic_bw, rate, 0, "bandwidth per NIC per direction")                                                                \
  X(nic_latency_s, seconds, 2e-6, "NIC latency")                                                                       \
  X(nvme_bytes, bytes, 0, "local NVMe capacity")                                                                       \
  X(nvme_read_bw, rate, 0, "NVMe sequential read bandwidth")                                                           \
  X(nvme_write_bw, rate, 0, "NVMe sequential write bandwidth")
// X(key, default, least, most, description)
#define MEMWALL_NODE_NUMBERS(X)                                                                                        \
  X(price_usd, 0, 0, 1e10, "indicative node price in USD, GPUs included")                                              \
  X(power_w, 0, 0, 1e7,                                                                                                \
    "system power at full load in watts, from the vendor's datasheet (GPUs, CPUs, memory, NICs, switches, fans): a "   \
    "run's power and energy; 0 = unknown (the GPUs' TDP alone)")
#define MEMWALL_NODE_COUNTS(X)                                                                                         \
  X(sockets, 1, 1, 1024, "CPU sockets (a rack: one per CPU)")                                                          \
  X(gpus_per_pcie_switch, 1, 1, 1024, "GPUs sharing one PCIe switch uplink")                                           \
  X(nics, 0, 0, 1024, "InfiniBand NICs for compute traffic")

namespace memwall {

// How a node's GPUs reach one another: through NVLink switches, over direct links
// between every pair (AMD's Infinity Fabric, NVLink bridges), both modelled as a switch of
// each GPU's aggregate link bandwidth; or through host memory over PCIe.
enum class GpuFabric { nvswitch, mesh, pcie };
const char* gpu_fabric_name(GpuFabric f);
// Whether GPUs exchange data over their own links (a switch or a mesh), not PCIe.
inline bool gpu_links(GpuFabric f) { return f != GpuFabric::pcie; }

// A node's system power with other GPUs in it: the rest of the system stays, the GPUs'
// TDP is swapped (0, unknown, when either TDP or the power is).
inline double swapped_gpu_power(double power_w, const GpuSpec& was, const GpuSpec& now, int gpus)
{
  if (was.id == now.id)
    return power_w;
  return power_w > 0 && was.tdp_w > 0 && now.tdp_w > 0 ? power_w + (now.tdp_w - was.tdp_w) * gpus : 0;
}

struct NodeSpec {
  std::string id;
  std::string name;
  GpuSpec gpu;
  int gpus         = 1;
  GpuFabric fabric = GpuFabric::pcie;
  MEMWALL_NODE_REQUIRED_QUANTITIES(MEMWALL_REQUIRED_MEMBER)
  MEMWALL_NODE_QUANTITIES(MEMWALL_QUANTITY_MEMBER)
  MEMWALL_NODE_NUMBERS(MEMWALL_NUMBER_MEMBER)
  MEMWALL_NODE_COUNTS(MEMWALL_COUNT_MEMBER)

  int gpus_per_socket() const { return (gpus + sockets - 1) / sockets; }
  int socket_of_gpu(int local) const { return local / gpus_per_socket(); }
  int pcie_switch_of_gpu(int local) const { return local / gpus_per_pcie_switch; }
  int pcie_switches() const { return (gpus + gpus_per_pcie_switch - 1) / gpus_per_pcie_switch; }
  int socket_of_switch(int sw) const { return socket_of_gpu(sw * gpus_per_pcie_switch); }
  int nic_of_gpu(int local) const { return nics > 0 ? local * nics / gpus : -1; }
};

} // namespace memwall

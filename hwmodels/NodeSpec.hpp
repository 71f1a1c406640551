#pragma once
// One server: its GPUs, how they connect to each other, to the CPU sockets, to the
// NICs and to local NVMe. Numbers in SI units (bytes, bytes/s, FLOP/s, seconds, USD).
#include "hwmodels/GpuSpec.hpp"

#include <string>

namespace memwall {

enum class GpuFabric { nvswitch, pcie };

struct NodeSpec {
  std::string id;
  std::string name;
  GpuSpec gpu;
  int gpus                = 1;
  GpuFabric fabric        = GpuFabric::pcie;
  double nvlink_latency_s = 1e-6;
  // Host side.
  int sockets                 = 1;
  double cpu_flops_per_socket = 1e12;  // fp32 FLOP/s (vector FMA peak)
  double dram_bytes           = 0;     // whole node
  double dram_bw_per_socket   = 100e9; // achievable
  double socket_link_bw       = 50e9;  // inter-socket (UPI/xGMI), per direction
  // A copy between pageable host memory and a GPU goes through the driver's pinned
  // staging buffer: one CPU thread's memcpy, pipelined with the DMA, at this rate.
  double pageable_copy_bw = 10.7e9;
  // PCIe tree: GPUs (and NICs) sit behind switches; each switch has one uplink to a socket.
  int gpus_per_pcie_switch = 1;
  double pcie_uplink_bw    = 25e9; // switch to socket, per direction, achievable
  double pcie_latency_s    = 1e-6;
  // Scale-out network.
  int nics             = 0;
  double nic_bw        = 0; // per NIC, per direction
  double nic_latency_s = 2e-6;
  // Local storage.
  double nvme_bytes    = 0;
  double nvme_read_bw  = 0;
  double nvme_write_bw = 0;
  double price_usd     = 0; // whole node, GPUs included

  int gpus_per_socket() const { return (gpus + sockets - 1) / sockets; }
  int socket_of_gpu(int local) const { return local / gpus_per_socket(); }
  int pcie_switch_of_gpu(int local) const { return local / gpus_per_pcie_switch; }
  int pcie_switches() const { return (gpus + gpus_per_pcie_switch - 1) / gpus_per_pcie_switch; }
  int socket_of_switch(int sw) const { return socket_of_gpu(sw * gpus_per_pcie_switch); }
  int nic_of_gpu(int local) const { return nics > 0 ? local * nics / gpus : -1; }
};

} // namespace memwall

#pragma once
// What NCCL's topology search finds for a group of GPUs on memwall's hardware: the
// communicator NcclTuning costs. NCCL measures its paths in its own units (topo.h):
// NVLink links x 20.6 GB/s on sm90, a PCIe link at width x speed / 80 (Gen5 x16: 48 GB/s),
// a NIC at its rate / 8; a channel across nodes runs GPU -> PCIe -> NIC, so it carries the
// lesser of the NIC and the PCIe link, and the search places one ring channel on each
// NIC the node's ranks reach (8 x 48 GB/s on a DGX H100, "Channel 05/16" in its logs).
#include "hwmodels/ClusterSpec.hpp"
#include "hwmodels/DeviceRef.hpp"
#include "sim/collective/NcclTuning.hpp"

#include <vector>

namespace memwall {

// PCIe bandwidth as NCCL's topology counts it, GB/s: width x speed / 80 with speed 60,
// 120, 240 for 8, 16, 32 GT/s (Gen3, Gen4, Gen5), i.e. 3/32 GB/s per lane and GT/s.
double nccl_pci_bw(int gen, int lanes);

// The communicator of `group` (ranks in ring order) on `cluster`.
NcclComm nccl_comm(const ClusterSpec& cluster, const std::vector<DeviceRef>& group);

} // namespace memwall

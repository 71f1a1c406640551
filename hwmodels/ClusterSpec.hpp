#pragma once
// N identical nodes on an InfiniBand or RoCE fabric: one non-blocking switch by default,
// an oversubscription factor that divides each node's share of it, or tiers of a Clos
// each with its own oversubscription (NetworkTier).
#include "hwmodels/NetworkTier.hpp"
#include "hwmodels/NodeSpec.hpp"

#include <algorithm>
#include <vector>

namespace memwall {

struct ClusterSpec {
  NodeSpec node;
  int nodes               = 1;
  int gpus_per_node       = 1;    // GPUs used in each node (may be fewer than node.gpus)
  double oversubscription = 1.0;  // 1 = non-blocking
  double switch_latency_s = 1e-6; // the switch every node's NICs reach (a leaf, a ToR)
  // Tiers above it, from the bottom; empty: that switch joins every node.
  std::vector<NetworkTier> tiers;
  // Rail-optimised: the leaf switches of the first tier's groups are one per NIC (rail),
  // so NICs of different rails meet only in the tier above (DGX SuperPOD's design).
  bool rail_optimized = false;
  // NVLink SHARP (NCCL's NVLS): all-reduces reduced in the NVSwitch, where the node's
  // switch and GPUs support it (sm90 and later); off as with NCCL_NVLS_ENABLE=0.
  bool nvls = true;

  // Facility overheads of the GPUs' power (cooling, conversion) and the price of energy.
  double pue         = 1.56; // Uptime Institute, Global Data Center Survey 2024: the average PUE
  double usd_per_mwh = 80;   // US EIA, Electric Power Monthly 2024: industrial average, ~8.0 cents/kWh

  int total_gpus() const { return nodes * gpus_per_node; }
  // The GPUs used and their share of each node (part of a DGX is priced as that part,
  // as a cloud or a shared node bills it; whole nodes as bought).
  double price_usd() const { return node.price_usd * nodes * gpus_per_node / node.gpus; }
  // The facility power `gpus` of the node's GPUs draw at their board power (TDP, or the
  // power limit a spec sets below it) times the PUE; 0 when the GPU's TDP is unknown.
  // CPUs, NICs and switches are not counted.
  double gpu_facility_power_w(double gpus) const
  {
    double board = node.gpu.power_limit_w > 0 && node.gpu.tdp_w > 0 ? std::min(node.gpu.tdp_w, node.gpu.power_limit_w)
                                                                    : node.gpu.tdp_w;
    return board * gpus * pue;
  }
  // The facility power of `gpus` GPUs' share of their nodes: the node's system power
  // (the vendor's figure for the whole server: a DGX H100 10.2 kW where its eight GPUs'
  // TDP is 5.6 kW) per GPU times the PUE; the GPUs' alone where the node's is unknown.
  double facility_power_w(double gpus) const
  {
    return node.power_w > 0 ? node.power_w / node.gpus * gpus * pue : gpu_facility_power_w(gpus);
  }
};

} // namespace memwall

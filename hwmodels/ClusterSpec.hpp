#pragma once
// N identical nodes on an InfiniBand fabric: non-blocking by default, or with an
// oversubscription factor that divides each node's share of the core bandwidth.
#include "hwmodels/NodeSpec.hpp"

namespace memwall {

struct ClusterSpec {
  NodeSpec node;
  int nodes               = 1;
  int gpus_per_node       = 1;   // GPUs used in each node (may be fewer than node.gpus)
  double oversubscription = 1.0; // 1 = non-blocking
  double switch_latency_s = 1e-6;

  int total_gpus() const { return nodes * gpus_per_node; }
  double price_usd() const { return node.price_usd * nodes; }
};

} // namespace memwall

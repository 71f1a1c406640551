#pragma once
// How a collective becomes flows on the real topology. One interface, implementations
// in impl/ registered by name and chosen by `hardware.network.collective_algorithm`.
//
// A plan is a list of phases run one after another; the activities of a phase (its
// flows, and a pure delay where latency terms are added analytically) run together.
#include "base/Registry.hpp"
#include "hwmodels/ClusterSpec.hpp"
#include "hwmodels/DeviceRef.hpp"
#include "workloads/dag/Op.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

struct Flow {
  DeviceRef src, dst;
  double bytes                       = 0;
  bool operator==(const Flow&) const = default;
};

struct CollectivePhase {
  std::vector<Flow> flows;
  double delay_s                                = 0; // runs beside the flows; a phase of only a delay models latency
  int repeat                                    = 1; // run this many times, each after the last (the steps of a ring)
  bool operator==(const CollectivePhase&) const = default;
};

struct CollectiveRequest {
  CollectiveKind kind                 = CollectiveKind::all_reduce;
  const std::vector<DeviceRef>* group = nullptr; // ring order
  double bytes                        = 0;       // all-reduce: buffer; all-gather: output; reduce-scatter: input
  // Latency of the route between two devices (one hop of a step).
  std::function<double(const DeviceRef&, const DeviceRef&)> latency;
  // The links of the route between two devices, and a link's bandwidth (bytes/s).
  std::function<const std::vector<int>&(const DeviceRef&, const DeviceRef&)> links;
  std::function<double(int)> link_bandwidth;
  // Whether a link belongs to the scale-out fabric beyond the NICs (a node's share of its
  // switch, a Clos tier's group links): where an oversubscribed fabric is narrower than
  // the NICs. Unset: none does.
  std::function<bool(int)> fabric_link;
  // The hardware the group runs on (the GPU, its node's links and NICs).
  const ClusterSpec* cluster = nullptr;
  // GPUs of a node reach each other through a switch (NVSwitch): every intra-node route
  // is alike, which lets an all-to-all be folded by symmetry (all_to_all_phase).
  bool switched_nodes = false;
};

class CollectiveAlgorithm {
public:
  virtual ~CollectiveAlgorithm()                                              = default;
  virtual std::vector<CollectivePhase> plan(const CollectiveRequest& r) const = 0;
  // Whether a plan inside one NVLink node is to be timed by the GPU profile's measured
  // NCCL curves (CollectiveTiming) where it holds them, or keeps its own timing.
  virtual bool measured_inside_node(const CollectiveRequest& /*r*/) const { return true; }
};

using CollectiveFactory = std::function<std::unique_ptr<CollectiveAlgorithm>()>;

// Name -> implementation; implementations add themselves from impl/.
Registry<CollectiveFactory>& collective_registry();

} // namespace memwall

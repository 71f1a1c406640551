#pragma once
// The replay's collectives (ReplayerCollectives.cpp): each (group, kind, bytes) planned
// once and shared by every op alike, the ones running phase by phase, and the flows of a
// batch's collectives that can matter (FlowFold.hpp).
#include "sim/collective/CollectiveAlgorithm.hpp"
#include "sim/collective/FlowFold.hpp"
#include "workloads/dag/Op.hpp"

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace memwall {

struct PlannedCollective {
  std::vector<CollectivePhase> phases;
  std::vector<int> links; // every link its flows cross, sorted
  // Measured on the first instance that ran with these links to its stream alone:
  // every later one takes as long and loads the links alike (ReplayerRuns.cpp).
  bool timed      = false;
  double duration = 0;
  std::vector<double> link_bytes, link_busy; // per entry of `links`
  uint64_t batch = 0;                        // CollectiveRuns::batch it was last checked in
};
using CollectiveKey = std::tuple<int32_t, CollectiveKind, double>;
struct CollectiveRun {
  PlannedCollective* plan = nullptr;
  size_t next             = 0;
  int repeats_done        = 0;     // of plan->phases[next]
  bool measure            = false; // private and not yet timed: measure this one
  double start            = 0;
  std::vector<double> bytes_before, busy_before; // of plan->links
};

struct CollectiveRuns {
  std::map<OpId, CollectiveRun> running;
  std::map<CollectiveKey, PlannedCollective> plans;
  // The batch's collectives unfolded, and which of their flows can matter.
  std::map<CollectiveKey, std::vector<CollectivePhase>> unfolded;
  FlowFold fold;
  uint64_t batch = 0; // batches folded so far
};

} // namespace memwall

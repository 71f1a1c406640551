#pragma once
// A collective as the replay plans it (CollectiveReplay.hpp): each (group, kind, bytes)
// planned once and shared by every op alike, and one running phase by phase.
#include "sim/collective/CollectiveAlgorithm.hpp"
#include "workloads/dag/Op.hpp"

#include <cstdint>
#include <tuple>
#include <vector>

namespace memwall {

struct PlannedCollective {
  std::vector<CollectivePhase> phases;
  std::vector<int> links; // every link its flows cross, sorted
  // Measured on the first instance that ran with these links to its stream alone:
  // every later one takes as long and loads the links alike (Coalescer.cpp).
  bool timed      = false;
  double duration = 0;
  std::vector<double> link_bytes, link_busy; // per entry of `links`
  uint64_t batch = 0;                        // CollectiveReplay::batch() it was last checked in
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

} // namespace memwall

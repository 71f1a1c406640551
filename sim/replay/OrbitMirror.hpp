#pragma once
// Orbit mirroring in the replay (OrbitMirror.cpp, OrbitFold.hpp): before a replay of one
// batch, every flow it can start is named as an orbit's image or as foreign, once; then
// the canonical images run for their orbits, their shared links at 1/m capacity, and
// the links' figures are mirrored onto every link of their classes when the replay ends.
#include "sim/replay/ActivityLauncher.hpp"
#include "sim/replay/ChainState.hpp"
#include "sim/replay/CollectiveReplay.hpp"
#include "sim/replay/OrbitFold.hpp"

#include <simgrid/forward.h>

#include <memory>
#include <utility>
#include <vector>

namespace memwall {

class OrbitMirror {
public:
  OrbitMirror(const OpDag& dag, const Platform& platform, ActivityLauncher& launcher, CollectiveReplay& collectives,
              ChainState& chains)
      : dag_(dag), platform_(platform), launcher_(launcher), collectives_(collectives), chains_(chains)
  {}

  // Ops [0, taken), replayed as one batch: which flows run for their whole orbit, and
  // the capacity their shared links then run at (restored by restore_links). `allowed`:
  // off, or a replay that pages or grows as it runs (every flow runs).
  void mirror(bool allowed, size_t taken);
  void restore_links();
  // A copy whose orbit is mirrored: its canonical image alone (the others would be
  // left out one by one). False when it is not.
  bool start_copy(OpId id, const Op& op);
  // At the end: the canonical links' figures onto every link of their classes.
  void mirror_figures();

private:
  // GPU i of a block of block_ GPUs turned by k inside its block.
  DeviceRef turned(const DeviceRef& gpu, int k) const;
  std::vector<int> orbit_routes(const DeviceRef& src, const DeviceRef& dst);
  bool add_copy_orbit(const Op& op);
  void add_collective_orbits(const PlannedCollective& plan);

  const OpDag& dag_;
  const Platform& platform_;
  ActivityLauncher& launcher_;
  CollectiveReplay& collectives_;
  ChainState& chains_;
  std::unique_ptr<OrbitFold> fold_; // null: every flow runs
  int block_ = 0;                   // GPUs a rotation turns: a representative and its shadows
  std::vector<std::pair<simgrid::s4u::Link*, double>> scaled_links_; // and their own bandwidth
};

} // namespace memwall

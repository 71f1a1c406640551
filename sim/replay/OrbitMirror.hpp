#pragma once
// Orbit mirroring in the replay (ReplayerOrbits.cpp): which flows run for their whole
// orbit (OrbitFold.hpp), the GPUs a rotation turns, and the links whose capacity was
// scaled for it (restored after the batch).
#include "sim/replay/OrbitFold.hpp"

#include <simgrid/forward.h>

#include <memory>
#include <utility>
#include <vector>

namespace memwall {

struct OrbitMirror {
  std::unique_ptr<OrbitFold> fold; // null: every flow runs
  int block = 0;                   // GPUs a rotation turns: a representative and its shadows
  std::vector<std::pair<simgrid::s4u::Link*, double>> scaled_links; // and their own bandwidth
};

} // namespace memwall

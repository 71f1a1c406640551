#pragma once
// What the replay knows of each GPU's streams (ActivityLauncher::note_streams): which GPUs'
// kernels may overlap on their HBM, the stream their kernels run on, the route of their
// HBM link, and a number per (device, stream) for coalescing.
#include "hwmodels/DeviceRef.hpp"
#include "workloads/dag/Op.hpp"

#include <map>
#include <set>
#include <utility>
#include <vector>

namespace memwall {

struct StreamFacts {
  std::vector<int> hbm_routes;    // per GPU (node x gpus per node + index), -1 until found
  std::set<DeviceRef> shared_hbm; // GPUs whose kernels may overlap
  std::map<DeviceRef, StreamKind> kernel_stream;
  std::map<std::pair<DeviceRef, StreamKind>, int> keys;
};

} // namespace memwall

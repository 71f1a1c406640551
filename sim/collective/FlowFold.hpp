#pragma once
// Which flows of the collectives the replay must start.
//
// The replay holds representative ranks only (OpDag: symmetric-rank folding); the other
// ranks run the same traffic on their own links. A collective still names every member,
// so a ring over 384 GPUs would start 384 flows per step, 2 x 383 steps per all-reduce,
// nearly all of them between GPUs nobody watches. A flow can change what the replay
// sees only through a link it shares, directly or through other flows, with something
// the replay runs: a flow to or from a device where the replay runs an op (a replayed
// device: the ops' GPUs, copies' ends, the shadow ranks' copies and host work), or the
// route of a copy, host step or kernel. Links shared by flows and routes form
// components (union-find over every flow of every collective of a batch, and every
// route of its other ops); a flow is kept when it touches a replayed device or its
// component holds a watched link. A flow left out shares no link with anything
// watched: it runs beside them untouched, and ends no later than its symmetric
// counterpart that is kept, so leaving it out changes no time, only the activity count
// (a 384-GPU ring step: 9 flows instead of 384; a ZeRO-3 gather on one DGX: 2 of 8).
// The links a left-out flow alone would have crossed carry no bytes in the outputs.
#include "hwmodels/DeviceRef.hpp"
#include "sim/collective/CollectiveAlgorithm.hpp"

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace memwall {

class FlowFold {
public:
  // A device where the replay runs something.
  void watch_device(const DeviceRef& d)
  {
    if (devices_.empty() || !(d == last_)) // ops come in runs of one device
      devices_.insert(d);
    last_ = d;
  }
  bool watches(const DeviceRef& d) const { return devices_.count(d) > 0; }
  bool touches(const Flow& f) const { return watches(f.src) || watches(f.dst); }
  // A flow's or a route's links: one component; `watched` when the replay runs it.
  void add_links(const std::vector<int>& links, bool watched);
  // Whether the replay must start `f`, which crosses `links`. Call after every add.
  bool keeps(const Flow& f, const std::vector<int>& links);

private:
  int find(int link);
  std::unordered_map<int, int> parent_;
  std::vector<int> watched_links_;
  std::set<int> watched_roots_; // made by the first `keeps` after the last add
  bool roots_ready_ = false;
  std::unordered_set<DeviceRef, DeviceRefHash> devices_; // looked up per op and flow: hashed
  DeviceRef last_;
};

} // namespace memwall

#pragma once
// The replay's activities in flight (ActivityLauncher), by the index their SimGrid handle
// carries: an ended one's slot is taken by the next, so the list stays as long as the
// most in flight at once.
#include "workloads/dag/OpDag.hpp"

#include <simgrid/s4u/Activity.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace memwall {

struct ReplayActivity {
  OpId op   = 0;
  int route = -1; // RouteTable's number, -1 for an Exec
  simgrid::s4u::ActivityPtr handle;
  bool paging = false; // a migration, fault batch or remote read, not the op's own work
};

struct ActivitySlots {
  // Keeps `a` in a free slot (the first ended one, else a new one); its slot number.
  size_t add(ReplayActivity a)
  {
    if (free.empty()) {
      last = activities.size();
      activities.push_back(std::move(a));
    } else {
      last = free.back();
      free.pop_back();
      activities[last] = std::move(a);
    }
    ++started;
    return last;
  }

  // The activity added last is a paging transfer, not its op's own work.
  void mark_last_paging() { activities[last].paging = true; }

  std::vector<ReplayActivity> activities;
  std::vector<uint32_t> free;
  size_t last = 0;                               // the slot add_activity filled last
  std::vector<simgrid::s4u::ActivityPtr> parked; // released on the next time advance
  int64_t started = 0;                           // activities started so far
};

} // namespace memwall

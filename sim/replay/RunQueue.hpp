#pragma once
// Coalesced runs in flight (ReplayerRuns.cpp). A run ends on a clock date, not as a
// SimGrid activity: it shares nothing, so it needs no model action, no share of a solve
// and no completion signal. Runs ending at one date end in the order they started; one
// kernel timer (SimGrid's event list) is armed for the earliest.
#include "workloads/dag/Op.hpp"

#include <cstdint>
#include <functional>
#include <queue>
#include <set>
#include <vector>

namespace memwall {

struct RunInFlight {
  double date  = 0;          // when the clock reaches its end
  uint64_t seq = 0;          // order of starting
  OpId tail    = 0;          // its last op
  std::vector<OpId> entries; // ops it completes before its last member
  size_t members = 0;        // ops and chain members it runs
  double end     = 0;        // the prefix sum of the members' times
  bool operator>(const RunInFlight& o) const { return date != o.date ? date > o.date : seq > o.seq; }
};

struct RunQueue {
  std::priority_queue<RunInFlight, std::vector<RunInFlight>, std::greater<>> queue;
  uint64_t seq = 0;
  std::set<double> armed_dates; // of the kernel timers set and not yet fired
  // SimGrid 3.32's "surf/precision": an activity due less than this after a clock stop
  // ends at that stop.
  double timing_precision = 0;
  std::vector<uint8_t> private_ops; // per op (id - base): may join a coalesced run
};

} // namespace memwall

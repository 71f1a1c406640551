#pragma once
// Coalescing (Coalescer.cpp): a run of ops on one stream replayed as one timed activity.
// A run ends on a clock date, not as a SimGrid activity: it shares nothing, so it needs
// no model action, no share of a solve and no completion signal. Runs ending at one
// date end in the order they started; one kernel timer (SimGrid's event list) is armed
// for the earliest.
#include "sim/replay/ActivityLauncher.hpp"
#include "sim/replay/ChainState.hpp"
#include "sim/replay/CollectiveReplay.hpp"
#include "sim/replay/DueMemory.hpp"
#include "sim/replay/OpIndex.hpp"
#include "sim/replay/PoolTable.hpp"
#include "sim/replay/ReplayRecords.hpp"

#include <cstdint>
#include <functional>
#include <queue>
#include <set>
#include <vector>

namespace memwall {

class Coalescer {
public:
  struct Run {
    double date  = 0;          // when the clock reaches its end
    uint64_t seq = 0;          // order of starting
    OpId tail    = 0;          // its last op
    std::vector<OpId> entries; // ops it completes before its last member
    size_t members = 0;        // ops and chain members it runs
    double end     = 0;        // the prefix sum of the members' times
    bool operator>(const Run& o) const { return date != o.date ? date > o.date : seq > o.seq; }
  };
  // The replay's parts a run reads and writes.
  struct Parts {
    const OpDag& dag;
    OpIndex& index;
    ChainState& chains;
    ActivityLauncher& launcher;
    CollectiveReplay& collectives;
    ReplayRecords& records;
    PoolTable& pools;
    DueMemory& due_memory;
  };
  // `enabled`: coalescing on and no unified memory (whose allocations take time);
  // `on_due`: called from the kernel timer armed for the earliest run's date.
  Coalescer(Parts parts, bool enabled, std::function<void()> on_due)
      : p_(parts), enabled_(enabled), on_due_(std::move(on_due))
  {}

  // Ops up to `ops` (id - base) taken; forget() drops what an earlier base indexed.
  void resize(size_t ops) { private_ops_.resize(ops, 0); }
  void forget() { private_ops_.clear(); }
  // Which of ops [from, to) may join a run: their resources are their stream's alone.
  void find_private_ops(size_t from, size_t to);
  bool member_private(RunMember s) const;
  // Starts a run from `head` if at least two members join; false when none started.
  bool start_run(OpId head);

  // SimGrid 3.32's "surf/precision": an activity due less than this after a clock stop
  // ends at that stop.
  void set_timing_precision(double p) { timing_precision_ = p; }
  // Whether the earliest run has ended at `now` (pop() it then), and the timer for the
  // next one.
  bool due(double now) const { return !queue_.empty() && queue_.top().date - now < timing_precision_; }
  Run pop();
  void rearm();
  // A run due within the timing precision of this clock stop ends at it.
  void time_advanced(double now)
  {
    if (due(now))
      arm(now);
  }

private:
  void arm(double date);
  // A run member's facts: private or not and, if it is, a kernel's time alone and HBM
  // busy time, a collective's plan.
  MemberFacts facts_of(const Op& op, bool priv);
  // A member's own time when it runs alone, if known without replaying it (it is private,
  // and a collective was timed); a kernel's HBM busy time in `hbm_busy` (its link
  // figures), a collective's plan in `plan` (its link figures).
  static bool member_duration(const Op& op, const MemberFacts& facts, double& seconds, double& hbm_busy,
                              const PlannedCollective*& plan);

  Parts p_;
  bool enabled_;
  std::function<void()> on_due_;
  std::vector<uint8_t> private_ops_; // per op (id - base): may join a coalesced run
  std::priority_queue<Run, std::vector<Run>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  std::set<double> armed_dates_; // of the kernel timers set and not yet fired
  double timing_precision_ = 0;
};

} // namespace memwall

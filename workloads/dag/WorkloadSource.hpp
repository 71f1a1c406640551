#pragma once
// A workload whose next ops depend on what the replay has done so far: a serving run's
// scheduler needs the time and the KV state to pick the next batch. The replay calls
// next() each time every op issued so far has completed; the source appends the next
// ops to its DAG (the one the replay reads), asks to be woken at a later time (an idle
// server waiting for a request), or says it is done. Data still flows one way: the
// source sees only the clock, never the simulator. As all its ops have run when next()
// is called, the source may forget them first (OpDag::forget_ops).
#include "workloads/dag/OpDag.hpp"

namespace memwall {

struct SourceDecision {
  enum class Kind { ops, wait, done } kind = Kind::done;
  double wake_at                           = 0; // wait: the time to be called again
};

class WorkloadSource {
public:
  virtual ~WorkloadSource()               = default;
  virtual const OpDag& dag() const        = 0;
  virtual SourceDecision next(double now) = 0;
};

} // namespace memwall

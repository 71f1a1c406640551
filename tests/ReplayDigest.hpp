#pragma once
// What two replays of one workload must agree on, as plain numbers (the replay's
// equivalence tests: coalescing, repeated passes): every op's start and end, every
// pool's peak and timeline, every link's bytes and busy time. Children hand a Digest
// back in a moment where a whole RunResult of a million op records takes a minute to
// encode.
#include "sim/result/RunResult.hpp"
#include "sim/Simulation.hpp"

#include <string>
#include <vector>

namespace memwall::test {

struct Digest {
  std::vector<double> ops;    // start, end per op, in op order
  std::vector<double> pools;  // peak, peak time, OOM count per pool
  std::vector<double> events; // time, category, total per memory event, pools in turn
  std::vector<double> links;  // bytes, busy per link
  std::string link_names;
  int64_t activities = 0;
  int64_t op_count   = 0;
  double makespan    = 0;
};

Digest digest(const RunResult& r);
// The digest of simulate(spec) with each of `hows`, each replayed in a child, two at a time.
std::vector<Digest> replays(const ExperimentSpec& spec, const std::vector<SimulateOptions>& hows);
std::string encode(const Digest& d);
Digest decode(const std::string& in);

// Every figure of `b` reproduced by `a`: times to 1e-9 of the makespan (never finer
// than SimGrid's 1e-9 s), memory events instant by instant, bytes to 1e-9
// of themselves (Catch2 CHECKs). Records are compared when both kept them.
void require_same_replay(const Digest& a, const Digest& b);
void require_same_replay(const RunResult& a, const RunResult& b);

} // namespace memwall::test

#pragma once
// Joins the layers: spec -> workload DAG + platform -> replay -> RunResult.
//
// SimGrid allows one Engine per process, never reset. `replay` runs in this process and
// may be called once; `replay_in_child` forks, replays in the child and returns the
// result through a pipe, so tests and sweeps can run many replays from one process.
#include "sim/result/RunResult.hpp"
#include "sim/replay/Replayer.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "workloads/dag/OpDag.hpp"

namespace memwall {

// chains: repeated passes stored once (OpDag::begin_capture).
OpDag build_workload(const ExperimentSpec& spec, bool chains = false);

// This process's SimGrid Engine, with logging off and the exact settings; the first
// call creates it, before any platform is built.
void start_engine();

RunResult replay(const ClusterSpec& cluster, const OpDag& dag, const ReplayOptions& options);
RunResult replay_in_child(const ClusterSpec& cluster, const OpDag& dag, const ReplayOptions& options);

// A serving run: the ServingDriver's iterations replayed as the scheduler picks them.
// Fills the result's `serving` statistics and its throughput inputs (tokens generated).
RunResult serve(const ExperimentSpec& spec, const ReplayOptions& options);

// The whole pipeline for a spec; fills the throughput and MFU inputs of the result.
struct SimulateOptions {
  bool progress         = false; // a progress line on stderr while it replays, when stderr is a terminal
  bool coalesce         = true;  // replay private runs of ops as one activity (ReplayOptions::coalesce)
  bool all_records      = true;  // a record per op (-o, --trace); else only the breakdown's intervals
  bool memory_timelines = true;  // every alloc and free in the pools' timelines (-o, --trace, sweeps' record.memory)
  // Without records, repeated passes generated and stored once (OpDag chains); off only
  // to check that the results are the same.
  bool chains        = true;
  bool mirror_orbits = true; // shadow ranks' symmetric flows run as one (ReplayOptions::mirror_orbits)
};
RunResult simulate(const ExperimentSpec& spec, bool in_child, const SimulateOptions& how = {});

// A training spec's step, op by op, and its replay with a record per op (in this
// process): what `memwall export` writes. InputError for what it cannot export yet
// (serving runs, unified memory, a spec that replays a trace).
struct ReplayedStep {
  OpDag dag;
  RunResult result;
};
ReplayedStep replay_step(const ExperimentSpec& spec);

} // namespace memwall

#pragma once
// The MPI side of a sweep that outgrows one machine: `mpirun -n N memwall sweep ...`.
// Rank 0 reads the spec, hands out points one at a time to whichever rank asks
// (dynamic load balancing), and alone writes the results file; ranks 1..N-1 run the
// points they are given, each in a forked child (one SimGrid Engine per process).
//
//   rank 0                         rank k > 0
//   setup (spec, --resume) ──────► status broadcast (0: go, 2: bad input, stop)
//   ◄── request ──────────────────  pool not full
//   ── index, or -1 when none ───►  fork the point
//   ◄── result (index, kind, data)  a child finished
//   ◄── done ─────────────────────  no more points and no children left
//
// MPI is optional at build time (MEMWALL_HAVE_MPI). A build without it refuses to run
// under mpirun with more than one rank rather than run the sweep N times over.
#include "app/sweep/SweepRunner.hpp"

#include <functional>
#include <vector>

namespace memwall {

class MpiWorld {
public:
  // Joins MPI when launched by mpirun with several ranks; otherwise a world of one.
  MpiWorld();
  ~MpiWorld(); // MPI_Finalize
  MpiWorld(const MpiWorld&)            = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank 0 tells every rank whether setup succeeded (0) or not (the exit code); the
  // others return what rank 0 sent.
  int broadcast_status(int status) const;

  // Rank 0: hands out `todo` to the other ranks and calls `done` as results arrive.
  // Returns false when `stop()` turned true first (the sweep was interrupted).
  bool coordinate_points(const std::vector<int64_t>& todo, const std::function<void(const PointOutcome&)>& done,
                         const std::function<bool()>& stop) const;
  // Ranks > 0: run the points rank 0 hands out, up to `jobs` at once.
  void serve_points(const SweepSpec& sweep, int jobs, const PointSummary& summarize) const;

  // Ends every rank with `code` (rank 0 stopping early).
  [[noreturn]] void abort(int code) const;

  // The number of ranks mpirun (Open MPI, MPICH, PMI) says it started, 1 if none.
  static int launched_ranks();

private:
  bool hand_out(const std::vector<int64_t>& todo, const std::function<void(const PointOutcome&)>& done,
                const std::function<bool()>& stop) const;

  int rank_ = 0, size_ = 1;
  bool joined_ = false;
};

} // namespace memwall

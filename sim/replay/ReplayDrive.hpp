#pragma once
// How far the replay has got and what drives it (Replayer.cpp: replay_loop).
#include "workloads/dag/WorkloadSource.hpp"

#include <cstddef>
#include <exception>

namespace memwall {

class ReplayProgress;

struct ReplayDrive {
  WorkloadSource* source = nullptr;
  double waiting_until   = 0; // the time a source asked to wake at while its delay runs
  std::exception_ptr failure; // thrown inside a SimGrid callback; rethrown by replay_loop
  size_t completed         = 0;
  size_t ops_done          = 0;       // ops completed, a chain's members each counted
  ReplayProgress* progress = nullptr; // while run() runs
  bool draining            = false;
};

} // namespace memwall

#pragma once
// Equal footing: the timing sources (TimingSources.hpp) of the machines a results table
// compares, part by part, and a warning where they differ. An H100 whose GEMMs are
// measured beside a B200 timed by estimated efficiencies differs by calibration as much
// as by hardware: a buyer reading the two figures must be told which is which.
#include "app/sweep/SweepFile.hpp"

#include <string>
#include <vector>

namespace memwall {

struct MachineTiming {
  std::string machine;
  std::vector<std::string> sources; // by part, in timing_sources' order; empty: not recorded
};

// The timing sources of row `row` of `t` (its hardware_profile.timing.* columns), under `machine`.
MachineTiming row_timing(const ResultsTable& t, size_t row, const std::string& machine);

// The machines of a sweep: the first row of each GPU (gpu.hardware, with the profile's
// name where one GPU ran under several) among `rows`.
std::vector<MachineTiming> sweep_machines(const ResultsTable& t, const std::vector<size_t>& rows);

// A table of each machine's source per part and, where a part's sources differ, the
// warning that names those parts. "" for fewer than two machines or none recorded.
std::string timing_comparison_text(const std::vector<MachineTiming>& machines);

} // namespace memwall

#pragma once
// The plan of a layout search (`memwall optimize`): for each GPU count, every layout the
// axes propose, checked by the spec's own validation (an invalid layout is counted with
// its reason, never run) and by the memory floor (one that cannot fit is counted, never
// run); what remains becomes a sweep whose points are replayed like any sweep's, in
// forked workers, resumable, into an HDF5 results file that `memwall report` and `plot`
// read. A point's settings are --set overrides of the spec: `memwall run SPEC --set ...`
// reproduces it.
#include "app/optimize/LayoutSpace.hpp"
#include "app/sweep/SweepSpec.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memwall {

struct OptimizeRequest {
  std::string spec_path;
  std::vector<std::string> overrides; // --set, applied to the spec first
  std::vector<int64_t> gpu_counts;    // empty: the spec's own hardware
  AxisValues axes;                    // --axis
  double amortization_years = 4;      // hardware price spread over this many years of steps
  double tokens             = 0;      // a training budget (days_to_train), 0: none
};

struct SearchPlan {
  std::string spec_file;                         // as given
  std::vector<int64_t> gpus;                     // the GPU counts searched
  int64_t enumerated = 0;                        // layouts the axes proposed
  int64_t invalid    = 0;                        // refused by the spec's validation
  int64_t cannot_fit = 0;                        // memory floor above the GPU's memory
  std::map<std::string, int64_t> invalid_by_key; // "training.pp": layouts refused on that key
  int64_t own_index = -1;                        // the spec's own layout's point, -1: not replayed
  // At each GPU count searched, the spec's own layout (its data parallelism scaled to the
  // count where it is not the spec's): what the best layout there is weighed against.
  std::map<int64_t, int64_t> own_by_gpus;
  std::map<std::string, std::string> spec_values; // each searched key's value in the spec as given
  SweepSpec sweep;                                // the layouts to replay, as a sweep
  std::string sweep_yaml;                         // its text (memwall sweep runs it as it is)
};

SearchPlan plan_search(const OptimizeRequest& request);

// GPU counts of --gpus-range A:B: A, 2A, 4A, ... up to B; InputError naming the option.
std::vector<int64_t> gpu_range(const std::string& text);

} // namespace memwall

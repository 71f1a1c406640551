#pragma once
// Opening memwall's HDF5 files for reading: which kind a file is, and a run file's
// summary. Every failure is one InputError naming the file and what was expected.
#include <nlohmann/json.hpp>

#include <string>

namespace memwall {

// "memwall-run" or "memwall-sweep". InputError when the file is missing, not HDF5
// (truncated), or HDF5 without memwall's format attribute.
std::string memwall_file_format(const std::string& path);

// What `memwall run -o` wrote at the root of a run file.
struct RunFileSummary {
  std::string spec_file, title, hardware, memwall_version, git_commit;
  nlohmann::ordered_json summary; // the run's --json object
};
RunFileSummary read_run_file(const std::string& path);

} // namespace memwall

#pragma once
// Input files read whole (spec files, sweep specs, their base specs, profiles,
// calibration measurements, traces, HF configs), checked before they are opened.
#include <string>
#include <vector>

namespace memwall {

// The largest input file memwall reads: a trace of a million requests is ~40 MB.
constexpr long long largest_input_file = 1LL << 30;

// InputError unless `path` is a regular file (after symlinks) no larger than
// largest_input_file: "<path>: <what> not found", "... is a FIFO, not a regular file",
// "... too many levels of symbolic links". Checked before opening, so a FIFO or a
// device never blocks the read.
void check_input_file(const std::string& path, const std::string& what);

// Every path check_input_file passed in this process, as given: outputs are checked
// against them, so that no output replaces an input.
const std::vector<std::string>& input_files_read();

// The whole file after check_input_file; InputError when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& what);

} // namespace memwall

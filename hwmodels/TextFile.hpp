#pragma once
// A whole text file as a string (spec files, sweep specs, their base specs, profiles,
// calibration measurements).
#include <string>

namespace memwall {

// InputError "<path>: <what> not found" when `path` is not a readable regular file.
std::string read_text_file(const std::string& path, const std::string& what);

} // namespace memwall

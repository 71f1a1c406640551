#pragma once
// Output files appear whole or not at all: writers fill a temporary file beside the
// target and rename it into place only once everything succeeded.
#include <functional>
#include <string>

namespace memwall {

// Calls write(temp_path); on success renames temp_path to path, on any exception
// removes temp_path and rethrows.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

} // namespace memwall

#pragma once
// The one exception type for bad user input (spec, catalog entry, trace, results file).
// The CLI turns it into a single line on stderr and exit code 2; nothing else catches it.
#include <stdexcept>
#include <string>

namespace memwall {

class InputError : public std::runtime_error {
public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

} // namespace memwall

#pragma once
// Results files damaged on purpose, behind a valid checksum: the structural checks of
// the readers are what such a file reaches, as one edited in place or forged does.
#include <H5Cpp.h>

#include <functional>
#include <string>

namespace memwall::test {

// A two-point sweep's results file (GPT-2 on a desktop GPU; the sweep spec is
// temp_path(NAME.yaml)) with `damage` applied through the HDF5 API and its checksum
// stamped again.
std::string damaged_sweep_file(const std::string& name, const std::function<void(H5::H5File&)>& damage);
// The same for a run file of small_training_spec (`memwall run -o`).
std::string damaged_run_file(const std::string& name, const std::function<void(H5::H5File&)>& damage);
// Sets a scalar text attribute, replacing the one of that name.
void replace_text_attribute(H5::H5Object& obj, const std::string& name, const std::string& value);
// Runs `command` (under a 60 s timeout) and checks the bad-input contract: exit 2, one
// line on stderr, holding `expect`.
void refused_file(const std::string& command, const std::string& expect);

} // namespace memwall::test

#pragma once
// Small builders shared by the tests: hand-made clusters whose every number is chosen
// so the expected times can be written out by hand, and a way to run the CLI.
#include "ClusterSpec.hpp"
#include "OpDag.hpp"
#include "RunResult.hpp"

#include <string>

namespace memwall::test {

// A node of `gpus` identical GPUs with round numbers; see the definition for them.
ClusterSpec hand_cluster(int gpus, GpuFabric fabric, int gpus_per_switch);

Op kernel_op(const DeviceRef& gpu, double flops, double bytes, const std::string& name);

const OpRecord& record(const RunResult& r, const std::string& name);

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the memwall binary with `args` (shell-quoted by the caller), after `launcher`
// when given (environment settings, mpirun and its options).
CliResult run_cli(const std::string& args, const std::string& launcher = "");
std::string source_path(const std::string& relative);
std::string temp_path(const std::string& name);
void write_file(const std::string& path, const std::string& text);

} // namespace memwall::test

#pragma once
// memwall's subcommands. Each takes the arguments after its name and returns the exit
// code: 0 success (a simulated OOM is a result), 2 bad input or usage, 3 runtime failure.
#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace memwall {

int run_command(const std::vector<std::string>& args);
int list_command(const std::vector<std::string>& args);
int sweep_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int plot_command(const std::vector<std::string>& args);
int advise_command(const std::vector<std::string>& args);
int calibrate_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);
int serve_capacity_command(const std::vector<std::string>& args);
int optimize_command(const std::vector<std::string>& args);

// Parses a command's options with up to `max_count` positional arguments (-1: any
// number) named `positional`; prints the help and returns false for --help.
bool parse_options(const std::vector<std::string>& args, const boost::program_options::options_description& opts,
                   const char* positional, boost::program_options::variables_map& vm, int max_count = 1);

// The cores this process may run on (its affinity mask): the default of -j.
int cores_available();

// Title line of an experiment, shared by the summary and provenance.
struct ExperimentSpec;
std::string experiment_title(const ExperimentSpec& spec);
std::string hardware_description(const ExperimentSpec& spec);

} // namespace memwall

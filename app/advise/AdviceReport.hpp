#pragma once
// The figures the out-of-memory advisor compares (from a replay's --json summary), and
// its report: the given configuration, every remedy tried with its peak memory against
// capacity and its step time (serving: output tokens/s), the first that fits and the
// command line that runs it.
#include "app/advise/Advisor.hpp"
#include "app/capacity/CapacitySearch.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace memwall {

// `targets`: serving latency targets a try must meet to count as fitting.
TryMeasure measure_try(const ExperimentSpec& spec, const RunResult& r, const std::vector<LatencyTarget>& targets = {});

std::string advice_text(const Advice& a, const std::string& spec_path, const std::string& title);
nlohmann::ordered_json advice_json(const Advice& a);

} // namespace memwall

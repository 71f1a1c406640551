#pragma once
// An experiment spec (YAML): sections `hardware`, `model`, `training` or `inference`, and
// optionally `memory`; or `hardware` and `workload` (a recorded trace). Every key is
// read with its description and default (see `memwall list params`); unknown keys,
// wrong types and impossible layouts are InputErrors naming file, line and key.
#include "hwmodels/ClusterSpec.hpp"
#include "sim/paging/UnifiedMemoryConfig.hpp"
#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/model/ModelSpec.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

#include <string>
#include <vector>

namespace memwall {

struct ExperimentSpec {
  std::string file; // as given on the command line
  std::string text; // the YAML after --set overrides, for provenance
  ClusterSpec cluster;
  ModelSpec model;
  TrainingConfig training; // when `training` is given
  bool serving = false;    // `inference` is given instead
  InferenceConfig inference;
  std::string collective_algorithm = "auto";
  UnifiedMemoryConfig memory; // `memory`: explicit, or unified for some or all categories
  // `workload.trace`: PyTorch profiler traces to replay instead of a generated step,
  // one per rank, resolved against the spec's folder and expanded (globs).
  std::vector<std::string> traces;
  int trace_ranks = 0;           // workload.ranks: 0 = one per trace
  std::string trace_recorded_on; // workload.recorded_on: a GPU preset id, "" = from the trace
};

// `overrides` are "a.b.c=value" strings from --set; value is parsed as YAML.
ExperimentSpec load_spec(const std::string& path, const std::vector<std::string>& overrides = {});
ExperimentSpec parse_spec(const std::string& yaml_text, const std::string& file, const std::string& spec_dir,
                          const std::vector<std::string>& overrides = {});

} // namespace memwall

#pragma once
// The `model` section of a spec: a preset, a HuggingFace config.json, or an explicit
// shape; explicit keys override what a preset or config gives.
#include "base/ParamReader.hpp"
#include "workloads/model/ModelSpec.hpp"

namespace memwall {

// `spec_dir` resolves a relative hf_config path against the spec file's folder.
ModelSpec read_model_section(ParamReader& r, const std::string& spec_dir);

} // namespace memwall

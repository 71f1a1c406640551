#pragma once
// Reads a HuggingFace `config.json` as it is, one reader per model_type (hf_model_types):
// keys memwall does not need are ignored (they are HF's, not ours), keys it needs must
// be there with the right type.
#include "workloads/model/ModelSpec.hpp"

#include <string>
#include <vector>

namespace memwall {

ModelSpec read_hf_config(const std::string& path);
std::vector<std::string> hf_model_types();

} // namespace memwall

#pragma once
// Named model presets (`gpt2`, `llama-2-7b`, ...). Identifiers are a public contract.
#include "workloads/model/ModelSpec.hpp"

#include <string>
#include <vector>

namespace memwall {

std::vector<std::string> model_preset_ids();
// Throws InputError naming close identifiers when `id` is unknown; `where` prefixes it.
ModelSpec model_preset(const std::string& id, const std::string& where = "");

} // namespace memwall

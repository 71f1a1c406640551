#pragma once
// Reads a HuggingFace `config.json` of the llama, mistral, gpt2, opt or gpt_neox
// families as it is: keys memwall does not need are ignored (they are HF's, not ours),
// keys it needs must be there with the right type.
#include "ModelSpec.hpp"

#include <string>

namespace memwall {

ModelSpec read_hf_config(const std::string& path);

} // namespace memwall

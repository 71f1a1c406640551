#pragma once
// Every key an experiment spec may hold, with its type, default and description: what
// `memwall list params` prints and what sweep axes are checked against.
#include "base/ParamReader.hpp"

#include <vector>

namespace memwall {

const std::vector<ParamDoc>& spec_param_docs();
// True if `key` ("training.micro_batch") is a spec key or a section holding some.
bool is_spec_key(const std::string& key);

} // namespace memwall

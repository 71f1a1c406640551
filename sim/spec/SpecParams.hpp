#pragma once
// Every key an experiment spec may hold, with its type, default and description: what
// `memwall list params` prints and what sweep axes are checked against. The keys of the
// sections themselves are documented by reading minimal specs; those of every
// implementation (a stack's, an engine's, ...) by asking each registry to make each of
// its entries with its defaults, so a key an implementation the defaults do not pick
// reads is listed too, with its owner.
#include "base/ParamReader.hpp"

#include <vector>

namespace memwall {

const std::vector<ParamDoc>& spec_param_docs();
// Makes every registered implementation with its defaults, recording its keys in param_docs().
void describe_every_implementation();
// True if `key` ("training.micro_batch") is a spec key or a section holding some.
bool is_spec_key(const std::string& key);

} // namespace memwall

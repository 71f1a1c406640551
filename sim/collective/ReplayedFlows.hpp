#pragma once
// Which flows of a collective phase the replay must start.
//
// The replay holds representative ranks only (OpDag: symmetric-rank folding); ranks on
// other nodes run the same traffic on their own links. A collective still names every
// member, so a ring over 384 GPUs would start 384 flows per step, 2 x 383 steps per
// all-reduce, nearly all of them between nodes nobody watches. A flow can change what
// a replayed node sees only through a link it shares with that node's flows: the
// flows kept are those touching a replayed node and, transitively, every flow sharing
// a link with a kept one. The others would run in parallel, untouched, and end no
// later than their symmetric counterparts that are kept, so dropping them changes no
// time, only the activity count (a 384-GPU ring step: 9 flows instead of 384).
#include "CollectiveAlgorithm.hpp"

#include <functional>
#include <set>
#include <vector>

namespace memwall {

using FlowLinks = std::function<const std::vector<int>&(const Flow&)>;

void keep_replayed_flows(std::vector<Flow>& flows, const std::set<int>& replayed_nodes, const FlowLinks& links_of);

} // namespace memwall

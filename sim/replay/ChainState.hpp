#pragma once
// Chains in the replay (OpDag::end_capture): a chain op runs its members in turn, and
// what the replay derives from a chain's members (which may join a run) is derived once
// per stored chain and batch, not once per repetition.
#include "workloads/dag/Op.hpp"

#include <cstdint>
#include <vector>

namespace memwall {

struct PlannedCollective;

// What a run needs of a step, side by side: it reads them for millions of members.
struct MemberFacts {
  double seconds                = 0;       // a kernel's time alone (0 else)
  double hbm_busy               = -1;      // a kernel's HBM busy time (hbm_busy_s)
  const PlannedCollective* plan = nullptr; // a collective's
  bool priv                     = false;   // private (find_private_ops)
};
struct ChainInfo {
  uint64_t batch = 0; // CollectiveRuns::batch the members' facts were derived in
  std::vector<MemberFacts> members;
};

struct ChainState {
  std::vector<uint32_t> member; // per op (id - base): the chain's member it is at
  std::vector<ChainInfo> info;  // per stored chain
  std::vector<uint64_t> seen;   // per stored chain: the visit_ops call that last saw it
  uint64_t visits = 0;
};

} // namespace memwall

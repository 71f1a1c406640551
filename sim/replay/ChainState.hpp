#pragma once
// Chains in the replay (OpDag::end_capture): a chain op runs its members in turn, and
// what the replay derives from a chain's members (which may join a run) is derived once
// per stored chain and batch, not once per repetition.
#include "sim/replay/OpIndex.hpp"
#include "workloads/dag/Op.hpp"
#include "workloads/dag/OpDag.hpp"

#include <cstdint>
#include <vector>

namespace memwall {

struct PlannedCollective;

// What a run needs of a step, side by side: it reads them for millions of members.
struct MemberFacts {
  double seconds                = 0;       // a kernel's time alone (0 else)
  double hbm_busy               = -1;      // a kernel's HBM busy time (ActivityLauncher::hbm_busy_s)
  const PlannedCollective* plan = nullptr; // a collective's
  bool priv                     = false;   // private (Coalescer::find_private_ops)
};
struct ChainInfo {
  uint64_t batch = 0; // CollectiveReplay::batch() the members' facts were derived in
  std::vector<MemberFacts> members;
};

// One unit of a stream's work, what a coalesced run is made of: op `id`, or member
// `member` of chain op `id`.
struct RunMember {
  OpId id         = 0;
  uint32_t member = 0;
};

class ChainState {
public:
  ChainState(const OpDag& dag, const OpIndex& index) : dag_(dag), index_(index) {}

  const Op& member_op(RunMember s) const
  {
    const Op& op = dag_.op(s.id);
    return op.kind == OpKind::chain ? dag_.chain(op.chain)[s.member] : op;
  }
  // The op `id` runs now: itself, or the member of its chain it is at.
  const Op& current_op(OpId id) const { return member_op({id, member[id - index_.base]}); }
  // A chain member's facts, null where they were not derived in batch `batch`.
  static const MemberFacts* facts(const ChainInfo& chain, uint32_t m, uint64_t batch)
  {
    return chain.batch == batch && m < chain.members.size() ? &chain.members[m] : nullptr;
  }
  // Calls f for every op of entries [from, to): a chain's members once per stored
  // chain and call (what it derives holds for every repetition). A template, so that
  // a serving run's per-iteration passes over its ops stay inlined loops.
  template <typename F>
  void visit(size_t from, size_t to, F&& f)
  {
    ++visits_;
    for (size_t v = from; v < to; ++v) {
      const Op& op = dag_.op(static_cast<OpId>(v));
      if (op.kind != OpKind::chain) {
        f(op);
      } else if (seen_[op.chain] != visits_) {
        seen_[op.chain] = visits_;
        for (const Op& m : dag_.chain(op.chain))
          f(m);
      }
    }
  }
  // Ops up to `n` taken (OpIndex), `chains` stored chains.
  void resize(size_t ops, size_t chains)
  {
    member.resize(ops, 0);
    info.resize(chains);
    seen_.resize(chains, 0);
  }

  std::vector<uint32_t> member; // per op (id - base): the chain's member it is at
  std::vector<ChainInfo> info;  // per stored chain

private:
  const OpDag& dag_;
  const OpIndex& index_;
  std::vector<uint64_t> seen_; // per stored chain: the visit() call that last saw it
  uint64_t visits_ = 0;
};

} // namespace memwall

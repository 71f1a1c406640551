#pragma once
// The replay's collectives (CollectiveReplay.cpp): a collective op planned into phases of
// flows (its algorithm, the shadow ranks' concurrent groups, NCCL's fitted speed inside
// a node, the flows left out because nothing the replay runs can see them: FlowFold)
// and run phase by phase; the first private instance of a plan measured for the others.
#include "sim/collective/CollectiveAlgorithm.hpp"
#include "sim/collective/FlowFold.hpp"
#include "sim/replay/ActivityLauncher.hpp"
#include "sim/replay/ChainState.hpp"
#include "sim/replay/OpIndex.hpp"
#include "sim/replay/PlannedCollective.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

class CollectiveReplay {
public:
  // `fold`: start only the flows that can affect what the replay runs (FlowFold.hpp);
  // `paging`: unified memory, whose migrations run beside every shadow rank.
  CollectiveReplay(const OpDag& dag, const Platform& platform, const std::string& algorithm, bool fold, bool paging,
                   ActivityLauncher& launcher, ChainState& chains, OpIndex& index);

  // Ops [from, to): what the replay will run, and every flow their collectives would
  // start, so that plans keep only the flows that can matter. A new batch.
  void fold_batch(size_t from, size_t to);
  uint64_t batch() const { return batch_; } // batches folded so far
  PlannedCollective& planned(const Op& op);
  // Starts collective op `id`; `measure`: private, so what its first instance takes
  // and loads is every later one's (PlannedCollective::timed).
  void start(OpId id, const Op& op, bool measure);
  // Starts its next phase; false when it has run them all.
  bool start_phase(OpId id);

private:
  // Every flow of the collective, its shadow ranks' concurrent groups' included.
  std::vector<CollectivePhase> plan(const Op& op);
  // NCCL's fitted efficiency and latency inside an NVSwitch node (CollectiveTiming.hpp).
  void calibrate(const Op& op, const std::vector<DeviceRef>& group, std::vector<CollectivePhase>& phases);
  void measure(CollectiveRun& run);
  const std::vector<int>& flow_links(const Flow& f);

  const OpDag& dag_;
  const Platform& platform_;
  std::unique_ptr<CollectiveAlgorithm> algorithm_;
  bool fold_on_, paging_;
  ActivityLauncher& launcher_;
  ChainState& chains_;
  OpIndex& index_;
  std::map<OpId, CollectiveRun> running_;
  std::map<CollectiveKey, PlannedCollective> plans_;
  // The batch's collectives unfolded, and which of their flows can matter.
  std::map<CollectiveKey, std::vector<CollectivePhase>> unfolded_;
  FlowFold fold_;
  uint64_t batch_ = 0;
};

} // namespace memwall

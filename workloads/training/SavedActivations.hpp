#pragma once
// What a block's forward keeps for its backward, and what its backward brings back by
// recomputing, under `training.recompute` (Korthikanti et al. 2022, §4): the one place
// the training generator asks. Only transformer layers recompute (BlockPlan::layer);
// embedding and head blocks keep what they save.
//   none       every kernel keeps its saved tensors;
//   selective  the kernels marked selective (the attention core) keep nothing and rerun
//              in backward, getting their saved tensors back; a stack's per-op policy
//              (KernelPlan::selective_kept / selective_regenerated, torchtitan's) keeps
//              other kernels' outputs instead and brings the rest back;
//   full       a layer keeps only its input (a checkpoint) and reruns its whole forward,
//              tensor-parallel collectives included, getting every saved tensor back;
//              a layer Megatron's block method leaves alone (BlockPlan::keeps_all)
//              keeps everything, as under none.
#include "workloads/training/blocks/BlockKernels.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

namespace memwall {

class SavedActivations {
public:
  explicit SavedActivations(Recompute recompute) : recompute_(recompute) {}

  // The policy that applies to block b: none for a layer the block method leaves alone.
  Recompute of(const BlockPlan& b) const
  {
    return !b.layer || (recompute_ == Recompute::full && b.keeps_all) ? Recompute::none : recompute_;
  }

  // Full recompute of a layer: it keeps its input and reruns its forward whole.
  bool checkpoints(const BlockPlan& b) const { return of(b) == Recompute::full; }
  // Its backward starts by recomputing.
  bool recomputes(const BlockPlan& b) const { return of(b) != Recompute::none; }
  // Bytes kernel k's forward keeps until its backward.
  double kept(const BlockPlan& b, const KernelPlan& k) const
  {
    if (of(b) == Recompute::none)
      return k.saved_bytes;
    if (of(b) == Recompute::full)
      return 0;
    return k.selective_kept >= 0 ? k.selective_kept : k.selective ? 0.0 : k.saved_bytes;
  }
  // Bytes of k's saved tensors the recompute brings back.
  double regenerated(const BlockPlan& b, const KernelPlan& k) const
  {
    if (!recomputes(b))
      return 0;
    if (of(b) == Recompute::full)
      return k.saved_bytes;
    return k.selective_regenerated >= 0 ? k.selective_regenerated : k.selective ? k.saved_bytes : 0.0;
  }
  // Whether the recompute reruns kernel k.
  bool reruns(const BlockPlan& b, const KernelPlan& k) const
  {
    return recomputes(b) && (of(b) == Recompute::full || k.selective);
  }

private:
  Recompute recompute_;
};

} // namespace memwall

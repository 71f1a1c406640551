#pragma once
// The pipeline part of a training step: each stage's slots in the order of its
// PipelineSchedule, the activations and gradients sent between stages, and the reuse
// of steady slots as stored chains (OpDag::begin_capture / repeat_chain).
#include "workloads/training/BlockPasses.hpp"
#include "workloads/training/SavedTensors.hpp"
#include "workloads/training/StepBuild.hpp"

#include <map>
#include <unordered_map>
#include <vector>

namespace memwall {

class PipelineSlots {
public:
  PipelineSlots(StepBuild& step, BlockPasses& passes, SavedTensors& saved) : step_(step), passes_(passes), saved_(saved)
  {}

  // Every stage's slots, each as soon as the slots it receives from are emitted.
  void emit();

private:
  void emit_slot(int stage, int64_t micro_batch, int64_t chunk, bool forward);
  // Reuse along time (OpDag chains). A steady slot changes no state but its micro-batch's
  // own tensors: any forward, and a backward that is neither a block's first (gradients
  // allocated) nor its last (buckets reduced), without ZeRO-2/3's per-micro-batch work.
  // Once two steady slots of a virtual stage and direction in a row were captured as
  // the same chain, later ones are not built: repeat_slot adds the chain again and
  // keeps the tensors' bookkeeping as building them would.
  bool steady_slot(int stage, int64_t chunk, bool forward) const;
  // Builds the slot's ops inside an OpDag capture, and notes whether it verified a repeat.
  void capture_slot(int stage, int64_t micro_batch, int64_t chunk, bool forward, uint64_t key, bool steady);
  void repeat_slot(int stage, int64_t micro_batch, int64_t chunk, bool forward, uint64_t key);

  struct SlotRepeat {
    bool last_steady = false;               // the last slot captured under the key was steady
    bool verified    = false;               // and matched the steady one before it: repeat from now on
    std::vector<std::vector<Tensor>> saved; // forward: its blocks' saved tensors, in chunk order
    std::vector<Tensor> checkpoints;        // forward: its blocks' kept inputs (full recompute)
  };

  StepBuild& step_;
  BlockPasses& passes_;
  SavedTensors& saved_;
  // (virtual stage, micro-batch) -> its send, until the slot that receives it is emitted
  std::unordered_map<uint64_t, OpId> fwd_sent_, bwd_sent_;
  // Each (virtual stage, direction)'s send name, "pp.send_act.vs3.mb17", interned once.
  std::vector<OpName> send_names_;
  std::map<uint64_t, SlotRepeat> repeats_; // by OpDag chain key
};

} // namespace memwall

#pragma once
// Builds the op DAG of one training step of a tp x pp x dp job. One representative GPU
// per pipeline stage stands for the tp x dp identical ranks of that stage
// (ParallelLayout); what it does:
//
//   setup      model states allocated where ZeRO and offload put them;
//   pipeline   the stage's forward/backward passes in the order of the chosen
//              PipelineSchedule; activations and gradients go stage to stage as
//              flows on the p2p stream; tensor-parallel collectives sit between the
//              kernels on the compute stream (BlockKernels);
//   per block  saved activations alive from forward to backward, or recomputed
//              (selective: attention core; full: everything but the layer input);
//              ZeRO-3 all-gathers parameters as the stack plans it and frees them;
//   gradients  DDP buckets all-reduced (ZeRO-0), reduce-scattered (ZeRO-1) in the last
//              micro-batch, or reduce-scattered every micro-batch (ZeRO-2/3);
//   optimizer  per block on the GPU, or on the CPU socket with gradients D2H and
//              updated parameters H2D (ZeRO-Offload), states streamed from NVMe (ZeRO-Infinity).
//
// This class lays the blocks and stages out and allocates the model states; the step
// itself is built by parts that each own their state, over the shared StepBuild:
// PipelineSlots (schedule order, stage-to-stage sends, repeated slots), BlockPasses (a
// block's kernels), SavedTensors, ParamGather (ZeRO-3, as the stack plans it),
// GradientSync (buckets, reductions), TensorCollectives (a tensor's collective as the
// stack issues it), OptimizerStep and TensorTouches (unified memory).
#include "hwmodels/ClusterSpec.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/training/StepBuild.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

namespace memwall {

class GradientSync;
class ParamGather;

class TrainingStepGenerator {
public:
  TrainingStepGenerator(const ModelSpec& model, const TrainingConfig& cfg, const ClusterSpec& cluster);
  // chains: repeated passes stored once (OpDag::begin_capture), for a replay that keeps
  // no record per op; off, every op is its own entry.
  OpDag generate(bool chains = false);

  // Bytes per trainable parameter of each model state, as ZeRO counts them (K = 12 for mixed Adam).
  double weight_bytes_per_param() const { return step_.state_bytes.weights; }
  double gradient_bytes_per_param() const { return step_.state_bytes.gradients; }
  double optimizer_bytes_per_param() const { return step_.state_bytes.optimizer; }

private:
  void build_stages();
  void emit_setup(const ParamGather& gathers, const GradientSync& grads);

  StepBuild step_;
};

} // namespace memwall

#pragma once
// The optimizer step, block by block in the order backward finishes them (last block
// first), each as soon as its gradients are reduced.
//   on the GPU   the stack's elementwise passes over this rank's shard; ZeRO-1/2 then
//                all-gather the updated compute-precision weights;
//   ZeRO-Offload the fp32 gradient shard is already in host DRAM (GradientSync); the
//                step runs on the CPU socket at its FLOP rate and DRAM bandwidth, and the
//                updated weights go H2D (overlapped with the next blocks' steps, as
//                DeepSpeed's CPU Adam does); the first step waits for the whole
//                backward unless offload.overlap_step;
//   NVMe         ZeRO-Infinity reads the block's states NVMe -> host before the step
//                and writes them back after it.
#include "workloads/training/StepBuild.hpp"
#include "workloads/training/TensorTouches.hpp"

namespace memwall {

class OptimizerStep {
public:
  OptimizerStep(StepBuild& step, TensorTouches& touches) : step_(step), touches_(touches) {}

  void emit();

private:
  void gpu_step(int b);
  void offloaded_step(int b, bool first); // first: the first step emitted (backward order)
  OpId all_grads_ready(int stage);        // a host-stream barrier after every block's gradients of the stage
  void gather_updated_weights(int b, OpId after);

  StepBuild& step_;
  TensorTouches& touches_;
};

} // namespace memwall

#pragma once
// What each kernel of a training step touches, for unified memory (OpDag::touch): the
// replay faults in whatever part of a managed tensor is away from the GPU.
//   a block's GEMMs read their slice of its weights, sized by their share of the block's
//   GEMM FLOPs (a linear layer's FLOPs are 2 x tokens x its parameters); a block without
//   GEMMs reads all its weights in its first kernel;
//   forward kernels write the activations they save, backward kernels read them back
//   and write their slice of the gradients (the micro-batch's bucket under ZeRO-2/3);
//   the optimizer's passes read the gradients and update the states and the weights.
// Recorded only when the spec manages memory (OpDag::tracks_accesses).
#include "workloads/training/ParamGather.hpp"
#include "workloads/training/StepBuild.hpp"

#include <utility>

namespace memwall {

class TensorTouches {
public:
  TensorTouches(StepBuild& step, const ParamGather& gathers) : step_(step), gathers_(gathers) {}

  // Kernel i of block b (its forward or backward), which keeps or reads `saved`.
  void touch_kernel(OpId k, int b, size_t i, bool forward, const Tensor& saved);
  void touch_optimizer_pass(OpId k, int b, bool grads, bool states, bool weights);

private:
  // Kernel `kernel` of a block's plan: (offset, share) of the block's weights it reads.
  static std::pair<double, double> weight_slice(const BlockPlan& plan, size_t kernel);
  Tensor weights_in_use(int b) const; // ZeRO-3: the gathered copy of the current use

  StepBuild& step_;
  const ParamGather& gathers_;
};

} // namespace memwall

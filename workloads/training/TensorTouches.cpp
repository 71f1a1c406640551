// What each kernel of a training step touches, for unified memory (OpDag::touch): the
// replay faults in whatever part of a managed tensor is away from the GPU.
//   a block's GEMMs read their slice of its weights, sized by their share of the block's
//   GEMM FLOPs (a linear layer's FLOPs are 2 x tokens x its parameters); a block without
//   GEMMs reads all its weights in its first kernel;
//   forward kernels write the activations they save, backward kernels read them back
//   and write their slice of the gradients (the micro-batch's bucket under ZeRO-2/3);
//   the optimizer's passes read the gradients and update the states and the weights.
#include "workloads/training/TrainingStepGenerator.hpp"

namespace memwall {

std::pair<double, double> TrainingStepGenerator::weight_slice(const BlockPlan& plan, size_t kernel) const
{
  double total = 0, before = 0;
  for (size_t i = 0; i < plan.kernels.size(); ++i)
    if (plan.kernels[i].kclass == KernelClass::gemm) {
      if (i < kernel)
        before += plan.kernels[i].fwd_flops;
      total += plan.kernels[i].fwd_flops;
    }
  if (total <= 0)
    return {0.0, kernel == 0 ? 1.0 : 0.0};
  if (plan.kernels[kernel].kclass != KernelClass::gemm)
    return {0.0, 0.0};
  return {before / total, plan.kernels[kernel].fwd_flops / total};
}

Tensor TrainingStepGenerator::weights_in_use(int b) const
{
  return cfg_.zero == 3 ? gathers_.at(next_use_).buffer : blocks_[b].weights;
}

void TrainingStepGenerator::touch_kernel(OpId k, int b, size_t i, bool forward, const Tensor& saved)
{
  if (!dag_.tracks_accesses())
    return;
  const Block& blk     = blocks_[b];
  auto [offset, share] = weight_slice(blk.plan, i);
  if (share > 0) {
    Tensor w = weights_in_use(b);
    dag_.touch(k, w, w.bytes * share, false, w.bytes * offset);
    const Tensor& g = blk.bucket.id != 0 ? blk.bucket : blk.grads;
    if (!forward)
      dag_.touch(k, g, g.bytes * share, true, g.bytes * offset);
  }
  dag_.touch(k, saved, saved.bytes, forward);
}

void TrainingStepGenerator::touch_optimizer_pass(OpId k, int b, bool grads, bool states, bool weights)
{
  if (!dag_.tracks_accesses())
    return;
  const Block& blk = blocks_[b];
  if (grads)
    dag_.touch(k, blk.grads, blk.grads.bytes, false);
  if (states)
    dag_.touch(k, blk.states, blk.states.bytes, true);
  if (weights)
    dag_.touch(k, blk.weights, blk.weights.bytes, true);
}

} // namespace memwall

#include "workloads/training/TensorTouches.hpp"

namespace memwall {

std::pair<double, double> TensorTouches::weight_slice(const BlockPlan& plan, size_t kernel)
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

Tensor TensorTouches::weights_in_use(int b) const
{
  return step_.cfg.zero == 3 ? gathers_.in_use(b) : step_.blocks[b].weights;
}

void TensorTouches::touch_kernel(OpId k, int b, size_t i, bool forward, const Tensor& saved)
{
  OpDag& dag = step_.dag;
  if (!dag.tracks_accesses())
    return;
  const StepBlock& blk = step_.blocks[b];
  auto [offset, share] = weight_slice(blk.plan, i);
  if (share > 0) {
    Tensor w = weights_in_use(b);
    dag.touch(k, w, w.bytes * share, false, w.bytes * offset);
    const Tensor& g = blk.bucket.id != 0 ? blk.bucket : blk.grads;
    if (!forward)
      dag.touch(k, g, g.bytes * share, true, g.bytes * offset);
  }
  dag.touch(k, saved, saved.bytes, forward);
}

void TensorTouches::touch_optimizer_pass(OpId k, int b, bool grads, bool states, bool weights)
{
  OpDag& dag = step_.dag;
  if (!dag.tracks_accesses())
    return;
  const StepBlock& blk = step_.blocks[b];
  if (grads)
    dag.touch(k, blk.grads, blk.grads.bytes, false);
  if (states)
    dag.touch(k, blk.states, blk.states.bytes, true);
  if (weights)
    dag.touch(k, blk.weights, blk.weights.bytes, true);
}

} // namespace memwall

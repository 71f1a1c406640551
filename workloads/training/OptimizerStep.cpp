#include "workloads/training/OptimizerStep.hpp"

namespace memwall {

void OptimizerStep::emit()
{
  bool first = true;
  for (int b = static_cast<int>(step_.blocks.size()); b-- > 0;) {
    if (step_.blocks[b].plan.params <= 0)
      continue;
    if (step_.cfg.offload_optimizer == OffloadTarget::none)
      gpu_step(b);
    else
      offloaded_step(b, first);
    first = false;
  }
}

void OptimizerStep::gpu_step(int b)
{
  // The stack's passes over this rank's shard, each its own kernel, one after another.
  OpDag& dag               = step_.dag;
  StepBlock& blk           = step_.blocks[b];
  const StepStage& s       = step_.stage_of(b);
  double n                 = step_.shard(b, blk.plan.params);
  const std::string prefix = blk.plan.name + ".";
  OpId last                = blk.grads_ready;
  OpId step                = last;
  ModelStateBytes bytes    = step_.state_bytes; // this block's states' width where the stack keeps it apart
  if (blk.plan.optimizer_bytes > 0)
    bytes.optimizer = blk.plan.optimizer_bytes / blk.plan.params;
  for (const OptimizerPass& p : step_.stack->optimizer_passes(step_.cfg, bytes)) {
    Op op     = kernel_op(s.gpu, KernelClass::elementwise, Dtype::fp32, p.flops_per_param * n, p.bytes_per_param * n, 0,
                          prefix + p.name);
    op.family = KernelFamily::optimizer;
    last      = dag.add(std::move(op), {last});
    touches_.touch_optimizer_pass(last, b, p.grads, p.states, p.weights);
    if (p.weights || p.states)
      step = last; // the weights are updated once every pass that writes them has run
  }
  if (blk.grads.id != 0)
    dag.free(blk.grads, s.gpu, StreamKind::compute, blk.plan.name + ".zero_grad");
  gather_updated_weights(b, step);
}

void OptimizerStep::gather_updated_weights(int b, OpId after)
{
  // ZeRO-1/2 keep full weights on every rank: each rank's updated shard goes to all.
  // ZeRO-3 keeps only the shard; ZeRO-0 updated the full weights everywhere.
  const StepStage& s = step_.stage_of(b);
  if ((step_.cfg.zero != 1 && step_.cfg.zero != 2) || step_.weights_gathered_in_forward())
    return;
  // Dense weights among the dp group, routed experts' among their owners (the edp group).
  const StepBlock& blk  = step_.blocks[b];
  auto [dense, experts] = step_.dense_and_experts(b, blk.plan.params * step_.state_bytes.weights);
  const double parts[2] = {dense, experts};
  for (size_t l = 0; l < s.reduce_groups.size(); ++l)
    if (s.reduce_groups[l] >= 0 && parts[l] > 0)
      step_.dag.add(collective_op(s.gpu, StreamKind::comm, CollectiveKind::all_gather, s.reduce_groups[l], parts[l],
                                  blk.plan.name +
                                      (l == 1 ? ".updated_expert_weights.all_gather" : ".updated_weights.all_gather")),
                    {after});
}

OpId OptimizerStep::all_grads_ready(int stage)
{
  const StepStage& s = step_.stages[stage];
  std::vector<OpId> all;
  for (const StepBlock& blk : step_.blocks)
    if (blk.stage == stage && blk.grads_ready != OpDag::none)
      all.push_back(blk.grads_ready);
  Op barrier;
  barrier.kind   = OpKind::host_compute;
  barrier.stream = StreamKind::host;
  barrier.device = s.host;
  barrier.src    = s.gpu;
  barrier.name   = "backward_done";
  return step_.dag.add(std::move(barrier), all);
}

void OptimizerStep::offloaded_step(int b, bool first)
{
  const TrainingConfig& cfg = step_.cfg;
  OpDag& dag                = step_.dag;
  StepBlock& blk            = step_.blocks[b];
  const StepStage& s        = step_.stage_of(b);
  double n                  = step_.shard(b, blk.plan.params);
  double ob                 = step_.state_bytes.optimizer;
  double wb                 = step_.state_bytes.weights;
  bool nvme                 = cfg.offload_optimizer == OffloadTarget::nvme;
  const std::string prefix  = blk.plan.name + ".optimizer";
  OpId ready                = blk.grads_ready;
  Tensor staging;
  // DeepSpeed calls optimizer.step() after backward: the first step (of the last block,
  // whose gradients arrive first) waits for every block's; the host stream keeps the rest
  // in order behind it.
  if (!cfg.overlap_offloaded_step && first)
    ready = all_grads_ready(blk.stage);
  if (nvme) {
    staging = dag.alloc(s.gpu, StreamKind::host, s.host, MemCategory::workspace, n * ob * step_.host_share(s, false),
                        prefix + ".staging", {ready});
    ready   = dag.add(copy_op(s.gpu, StreamKind::host, s.nvme, s.host, n * ob, prefix + ".states_from_nvme"));
  }
  // CPU Adam reads the fp32 gradient and the states and writes states and fp16 weights.
  Op step;
  step.kind   = OpKind::host_compute;
  step.stream = StreamKind::host;
  step.device = s.host;
  step.src    = s.gpu; // the rank it works for: its peers' steps run beside it
  step.name   = prefix + "_step.cpu";
  step.dtype  = Dtype::fp32;
  step.flops  = optimizer_flops_per_param(cfg.optimizer) * n;
  step.bytes  = (4.0 + 2 * ob + wb) * n;
  OpId done   = dag.add(std::move(step), {ready});
  if (blk.host_grads.id != 0)
    dag.free(blk.host_grads, s.gpu, StreamKind::host, prefix + ".free_host_grads", {done});
  if (blk.grads.id != 0)
    dag.free(blk.grads, s.gpu, StreamKind::compute, blk.plan.name + ".zero_grad", {done});
  if (nvme) {
    double bytes = n * ob + (cfg.offload_params == OffloadTarget::nvme ? n * wb : 0.0);
    OpId w       = dag.add(copy_op(s.gpu, StreamKind::host, s.host, s.nvme, bytes, prefix + ".states_to_nvme"), {done});
    dag.free(staging, s.gpu, StreamKind::host, prefix + ".free_staging", {w});
  }
  if (cfg.offload_params != OffloadTarget::none)
    return; // the updated shard stays where the parameters live; the next forward fetches it
  OpId up = dag.add(host_copy_op(s.gpu, StreamKind::h2d, s.host, s.gpu, n * wb, blk.plan.name + ".updated_weights_h2d",
                                 cfg.offload_pinned),
                    {done});
  gather_updated_weights(b, up);
}

} // namespace memwall

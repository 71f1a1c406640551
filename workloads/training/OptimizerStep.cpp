// The optimizer step, block by block in the order backward finishes them (last block
// first), each as soon as its gradients are reduced.
//   on the GPU   elementwise passes over this rank's shard (emit_gpu_step); ZeRO-1/2
//                then all-gather the updated compute-precision weights;
//   ZeRO-Offload the fp32 gradient shard is already in host DRAM (GradientSync); the
//                step runs on the CPU socket at its FLOP rate and DRAM bandwidth, and the
//                updated weights go H2D (overlapped with the next blocks' steps, as
//                DeepSpeed's CPU Adam does); the first step waits for the whole
//                backward unless offload.overlap_step;
//   NVMe         ZeRO-Infinity reads the block's states NVMe -> host before the step
//                and writes them back after it.
#include "workloads/training/TrainingStepGenerator.hpp"

namespace memwall {

void TrainingStepGenerator::emit_optimizer()
{
  bool first = true;
  for (int b = static_cast<int>(blocks_.size()); b-- > 0;) {
    if (blocks_[b].plan.params <= 0)
      continue;
    if (cfg_.offload_optimizer == OffloadTarget::none)
      emit_gpu_step(b);
    else
      emit_offloaded_step(b, first);
    first = false;
  }
}

void TrainingStepGenerator::emit_gpu_step(int b)
{
  // The stack's passes over this rank's shard, each its own kernel, one after another.
  Block& blk               = blocks_[b];
  Stage& s                 = stage_of(b);
  double n                 = shard(b, blk.plan.params);
  const std::string prefix = blk.plan.name + ".";
  OpId last                = blk.grads_ready;
  OpId step                = last;
  for (const OptimizerPass& p : stack_->optimizer_passes(cfg_, state_bytes_)) {
    Op op     = kernel_op(s.gpu, KernelClass::elementwise, Dtype::fp32, p.flops_per_param * n, p.bytes_per_param * n, 0,
                          prefix + p.name);
    op.family = KernelFamily::optimizer;
    last      = dag_.add(std::move(op), {last});
    touch_optimizer_pass(last, b, p.grads, p.states, p.weights);
    if (p.weights || p.states)
      step = last; // the weights are updated once every pass that writes them has run
  }
  if (blk.grads.id != 0)
    dag_.free(blk.grads, s.gpu, StreamKind::compute, blk.plan.name + ".zero_grad");
  gather_updated_weights(b, step);
}

void TrainingStepGenerator::gather_updated_weights(int b, OpId after)
{
  // ZeRO-1/2 keep full weights on every rank: each rank's updated shard goes to all.
  // ZeRO-3 keeps only the shard; ZeRO-0 updated the full weights everywhere.
  Stage& s = stage_of(b);
  if (cfg_.zero != 1 && cfg_.zero != 2)
    return;
  // Dense weights among the dp group, routed experts' among their owners (the edp group).
  auto [dense, experts] = dense_and_experts(b, blocks_[b].plan.params * weight_bytes_per_param());
  const double parts[2] = {dense, experts};
  for (size_t l = 0; l < s.lanes.size(); ++l)
    if (s.lanes[l].group >= 0 && parts[l] > 0)
      dag_.add(collective_op(s.gpu, StreamKind::comm, CollectiveKind::all_gather, s.lanes[l].group, parts[l],
                             blocks_[b].plan.name + (s.lanes[l].experts ? ".updated_expert_weights.all_gather"
                                                                        : ".updated_weights.all_gather")),
               {after});
}

// A host-stream no-op after the gradients of every block of the stage are in host memory.
OpId TrainingStepGenerator::all_grads_ready(int stage)
{
  const Stage& s = stages_[stage];
  std::vector<OpId> all;
  for (const Block& blk : blocks_)
    if (blk.stage == stage && blk.grads_ready != OpDag::none)
      all.push_back(blk.grads_ready);
  Op barrier;
  barrier.kind   = OpKind::host_compute;
  barrier.stream = StreamKind::host;
  barrier.device = s.host;
  barrier.src    = s.gpu;
  barrier.name   = "backward_done";
  return dag_.add(std::move(barrier), all);
}

void TrainingStepGenerator::emit_offloaded_step(int b, bool first)
{
  Block& blk               = blocks_[b];
  Stage& s                 = stage_of(b);
  double n                 = shard(b, blk.plan.params);
  double ob                = optimizer_bytes_per_param();
  double wb                = weight_bytes_per_param();
  bool nvme                = cfg_.offload_optimizer == OffloadTarget::nvme;
  const std::string prefix = blk.plan.name + ".optimizer";
  OpId ready               = blk.grads_ready;
  Tensor staging;
  // DeepSpeed calls optimizer.step() after backward: the first step (of the last block,
  // whose gradients arrive first) waits for every block's; the host stream keeps the rest
  // in order behind it.
  if (!cfg_.overlap_offloaded_step && first)
    ready = all_grads_ready(blk.stage);
  if (nvme) {
    staging = dag_.alloc(s.gpu, StreamKind::host, s.host, MemCategory::workspace, n * ob * host_share(s, false),
                         prefix + ".staging", {ready});
    ready   = dag_.add(copy_op(s.gpu, StreamKind::host, s.nvme, s.host, n * ob, prefix + ".states_from_nvme"));
  }
  // CPU Adam reads the fp32 gradient and the states and writes states and fp16 weights.
  Op step;
  step.kind   = OpKind::host_compute;
  step.stream = StreamKind::host;
  step.device = s.host;
  step.src    = s.gpu; // the rank it works for: its peers' steps run beside it
  step.name   = prefix + "_step.cpu";
  step.dtype  = Dtype::fp32;
  step.flops  = optimizer_flops_per_param(cfg_.optimizer) * n;
  step.bytes  = (4.0 + 2 * ob + wb) * n;
  OpId done   = dag_.add(std::move(step), {ready});
  if (blk.host_grads.id != 0)
    dag_.free(blk.host_grads, s.gpu, StreamKind::host, prefix + ".free_host_grads", {done});
  if (blk.grads.id != 0)
    dag_.free(blk.grads, s.gpu, StreamKind::compute, blk.plan.name + ".zero_grad", {done});
  if (nvme) {
    double bytes = n * ob + (cfg_.offload_params == OffloadTarget::nvme ? n * wb : 0.0);
    OpId w = dag_.add(copy_op(s.gpu, StreamKind::host, s.host, s.nvme, bytes, prefix + ".states_to_nvme"), {done});
    dag_.free(staging, s.gpu, StreamKind::host, prefix + ".free_staging", {w});
  }
  if (cfg_.offload_params != OffloadTarget::none)
    return; // the updated shard stays where the parameters live; the next forward fetches it
  OpId up = dag_.add(host_copy_op(s.gpu, StreamKind::h2d, s.host, s.gpu, n * wb, blk.plan.name + ".updated_weights_h2d",
                                  cfg_.offload_pinned),
                     {done});
  gather_updated_weights(b, up);
}

} // namespace memwall

#include "TrainingStepGenerator.hpp"

namespace memwall {

TrainingStepGenerator::TrainingStepGenerator(const ModelSpec& model, const TrainingConfig& cfg,
                                             const ClusterSpec& cluster)
    : model_(model), cfg_(cfg), cluster_(cluster)
{
  gpu_ = DeviceRef{DeviceKind::gpu, 0, 0};
  StepShape s;
  s.micro_batch  = cfg.micro_batch;
  s.seq_len      = cfg.seq_len;
  s.act_bytes    = dtype_bytes(cfg.precision);
  s.weight_bytes = weight_bytes_per_param();
  s.flash        = cfg.flash_attention;
  blocks_.push_back({embedding_block(model, s), {}, {}, OpDag::none});
  for (int64_t l = 0; l < model.layers; ++l)
    blocks_.push_back({transformer_layer_block(model, s, l), {}, {}, OpDag::none});
  blocks_.push_back({head_block(model, s), {}, {}, OpDag::none});
}

double TrainingStepGenerator::weight_bytes_per_param() const { return cfg_.mixed_precision() ? 2.0 : 4.0; }
double TrainingStepGenerator::gradient_bytes_per_param() const { return weight_bytes_per_param(); }
double TrainingStepGenerator::optimizer_bytes_per_param() const
{
  // Adam keeps momentum and variance in fp32; SGD keeps momentum. Mixed precision adds
  // an fp32 master copy of the weights (ZeRO's K = 12 for Adam).
  double states = cfg_.optimizer == Optimizer::adam ? 8.0 : 4.0;
  return states + (cfg_.mixed_precision() ? 4.0 : 0.0);
}

OpId TrainingStepGenerator::kernel(const std::string& name, KernelClass kclass, Dtype dtype, double flops,
                                   double model_flops, double bytes)
{
  Op op;
  op.kind        = OpKind::kernel;
  op.stream      = StreamKind::compute;
  op.device      = gpu_;
  op.name        = name;
  op.kclass      = kclass;
  op.dtype       = dtype;
  op.flops       = flops;
  op.model_flops = model_flops;
  op.bytes       = bytes;
  return dag_.add(std::move(op));
}

OpDag TrainingStepGenerator::generate()
{
  std::vector<DeviceRef> members;
  for (int n = 0; n < cluster_.nodes; ++n)
    for (int i = 0; i < cluster_.gpus_per_node; ++i)
      members.push_back({DeviceKind::gpu, n, i});
  dag_.set_represents(gpu_, static_cast<int>(cfg_.dp));
  if (cfg_.dp > 1)
    dp_group_ = dag_.add_group(members);

  emit_setup();
  int64_t m = cfg_.micro_batches();
  for (int mb = 0; mb < m; ++mb) {
    for (auto& b : blocks_)
      emit_forward(b);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it)
      emit_backward(*it, mb);
  }
  if (dp_group_ >= 0) {
    // Without overlap every bucket waits for the end of backward; sizes stay the same.
    OpId end_of_backward = dag_.stream_tail(gpu_, StreamKind::compute);
    if (!cfg_.overlap_grad_reduce)
      for (size_t i = 0; i < buckets_.size(); ++i)
        emit_bucket(buckets_[i], end_of_backward, static_cast<int>(i));
    if (pending_bucket_ > 0)
      emit_bucket(pending_bucket_, end_of_backward, static_cast<int>(buckets_.size()));
  }
  emit_optimizer();
  return std::move(dag_);
}

void TrainingStepGenerator::emit_setup()
{
  const double ctx = cluster_.node.gpu.context_bytes;
  if (ctx > 0)
    dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::context, ctx, "cuda_context");
  for (auto& b : blocks_) {
    if (b.plan.params <= 0)
      continue;
    dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::weights, b.plan.params * weight_bytes_per_param(),
               b.plan.name + ".weights");
    dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::optimizer,
               b.plan.params * optimizer_bytes_per_param(), b.plan.name + ".optimizer_states");
  }
}

void TrainingStepGenerator::emit_forward(BlockState& b)
{
  const std::string prefix = b.plan.name + ".fwd.";
  b.saved.assign(b.plan.kernels.size(), Tensor{});
  for (size_t i = 0; i < b.plan.kernels.size(); ++i) {
    const KernelPlan& k = b.plan.kernels[i];
    if (k.saved_bytes > 0)
      b.saved[i] = dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::activations, k.saved_bytes,
                              prefix + k.name + ".saved");
    kernel(prefix + k.name, k.kclass, cfg_.precision, k.fwd_flops, k.kclass == KernelClass::elementwise ? 0 : k.fwd_flops,
           k.fwd_bytes);
  }
}

void TrainingStepGenerator::emit_backward(BlockState& b, int mb)
{
  const std::string prefix = b.plan.name + ".bwd.";
  // Gradients appear at the first backward and live until the optimizer has used them.
  if (mb == 0 && b.plan.params > 0)
    b.grads = dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::gradients,
                         b.plan.params * gradient_bytes_per_param(), b.plan.name + ".grads");
  Tensor ws;
  if (b.plan.backward_workspace > 0)
    ws = dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::workspace, b.plan.backward_workspace,
                    prefix + "activation_grads");
  for (size_t i = b.plan.kernels.size(); i-- > 0;) {
    const KernelPlan& k = b.plan.kernels[i];
    kernel(prefix + k.name, k.kclass, cfg_.precision, k.bwd_flops, k.kclass == KernelClass::elementwise ? 0 : k.bwd_model_flops,
           k.bwd_bytes);
    if (b.saved[i].id != 0)
      dag_.free(b.saved[i], gpu_, StreamKind::compute, prefix + k.name + ".free_saved");
  }
  if (ws.id != 0)
    dag_.free(ws, gpu_, StreamKind::compute, prefix + "free_activation_grads");
  b.last_backward = dag_.stream_tail(gpu_, StreamKind::compute);

  // DDP: gradients are reduced in the last micro-batch only (no_sync before it), in
  // buckets filled in backward order, each launched as soon as it is full.
  bool last_mb = mb == cfg_.micro_batches() - 1;
  if (dp_group_ >= 0 && last_mb && b.plan.params > 0) {
    pending_bucket_ += b.plan.params * gradient_bytes_per_param();
    if (pending_bucket_ >= cfg_.bucket_bytes) {
      if (cfg_.overlap_grad_reduce)
        emit_bucket(pending_bucket_, b.last_backward, static_cast<int>(buckets_.size()));
      buckets_.push_back(pending_bucket_);
      pending_bucket_ = 0;
    }
  }
}

void TrainingStepGenerator::emit_bucket(double bytes, OpId after, int index)
{
  Op op;
  op.kind       = OpKind::collective;
  op.stream     = StreamKind::comm;
  op.device     = gpu_;
  op.name       = "ddp.bucket" + std::to_string(index) + ".all_reduce";
  op.collective = CollectiveKind::all_reduce;
  op.group      = dp_group_;
  op.bytes      = bytes;
  dag_.add(std::move(op), {after});
}

void TrainingStepGenerator::emit_optimizer()
{
  OpId comm_done = dag_.stream_tail(gpu_, StreamKind::comm);
  // Adam reads gradient, master weights, momentum and variance, writes the three
  // states and the compute-precision weights: (2 + 4 + 4 + 4) + (4 + 4 + 4 + 2) = 28 B per
  // parameter in mixed precision. SGD: gradient, master, momentum in; master, momentum, weights out.
  double touched = gradient_bytes_per_param() + 2 * optimizer_bytes_per_param() +
                   (cfg_.mixed_precision() ? weight_bytes_per_param() : 0.0);
  double flops_per_param = cfg_.optimizer == Optimizer::adam ? 12.0 : 4.0;
  bool first = true;
  for (auto& b : blocks_) {
    if (b.plan.params <= 0)
      continue;
    OpId k = kernel(b.plan.name + ".optimizer_step", KernelClass::elementwise, Dtype::fp32, flops_per_param * b.plan.params,
                    0, touched * b.plan.params);
    if (first)
      dag_.depend(k, comm_done);
    first = false;
    dag_.free(b.grads, gpu_, StreamKind::compute, b.plan.name + ".zero_grad");
  }
}

} // namespace memwall

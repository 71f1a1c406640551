// Gradients of a training step: where they live and how the data-parallel replicas
// reduce them.
//   ZeRO-0  full gradients; DDP buckets all-reduced in the last micro-batch (no_sync before);
//   ZeRO-1  full gradients; buckets reduce-scattered in the last micro-batch;
//   ZeRO-2/3 only this rank's shard is kept: each micro-batch's block gradient is built
//           in a workspace bucket, reduce-scattered into the shard and freed (DeepSpeed's
//           ipg buckets), here one bucket per block.
// With the optimizer offloaded the reduced shard goes D2H into fp32 host gradients.
// Under expert parallelism the routed experts' gradients are reduced apart, among the
// dp / ep ranks that hold the same experts (Megatron-Core's expert-data-parallel group).
#include "workloads/training/TrainingStepGenerator.hpp"

namespace memwall {

bool TrainingStepGenerator::ddp_bucket_copies() const
{
  return cfg_.zero == 0 && cfg_.replicas() > 1 && stack_->ddp_copies_gradients();
}

void TrainingStepGenerator::alloc_gradients(int b)
{
  Block& blk = blocks_[b];
  Stage& s   = stage_of(b);
  if (blk.plan.params <= 0)
    return;
  double full  = blk.plan.params * gradient_bytes_per_param();
  bool offload = cfg_.offload_optimizer != OffloadTarget::none;
  if (blk.backwards == 0) {
    if (cfg_.zero <= 1)
      blk.grads = dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::gradients, full, blk.plan.name + ".grads");
    else if (!offload)
      blk.grads = dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::gradients, shard(b, full),
                             blk.plan.name + ".grad_shard");
    if (offload) // fp32 gradient shard in host DRAM, for every rank on the socket
      blk.host_grads =
          dag_.alloc(s.gpu, StreamKind::compute, s.host, MemCategory::gradients,
                     4.0 * shard(b, blk.plan.params) * host_share(s, false), blk.plan.name + ".host_grads");
  }
  // ZeRO-2/3: the block's full gradient of this micro-batch is built in a bucket; with
  // `buckets_in_flight` buckets still reducing, backward waits for the oldest.
  if (cfg_.zero >= 2) {
    blk.bucket = dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::workspace, full,
                            OpName(blk.plan.name + ".mb", static_cast<uint64_t>(blk.backwards), ".grad_bucket"));
    if (static_cast<int64_t>(s.buckets_in_flight.size()) >= cfg_.buckets_in_flight) {
      dag_.depend(dag_.last_alloc_or_free(), s.buckets_in_flight.front());
      s.buckets_in_flight.pop_front();
    }
  }
}

void TrainingStepGenerator::reduce_gradients(int b, int64_t mb)
{
  Block& blk = blocks_[b];
  Stage& s   = stage_of(b);
  if (blk.plan.params <= 0)
    return;
  double full = blk.plan.params * gradient_bytes_per_param();
  if (cfg_.zero <= 1 && blk.backwards < cfg_.micro_batches())
    return;                // no_sync: nothing waits on this pass, so it may repeat as a chain (OpDag)
  if (ddp_bucket_copies()) // grad * (1 / dp) into the bucket's view (Reducer::mark_variable_ready_dense)
    dag_.add(kernel_op(s.gpu, KernelClass::elementwise, Dtype::fp32, 0, 2 * full, 0,
                       blk.plan.name + ".ddp.copy_into_bucket"));
  OpId last             = dag_.stream_tail(s.gpu, StreamKind::compute);
  auto [dense, experts] = dense_and_experts(b, full);
  const double parts[2] = {dense, experts}; // per lane: dense gradients, routed experts'
  if (cfg_.zero <= 1) {
    for (size_t l = 0; l < s.lanes.size(); ++l) {
      BucketLane& lane = s.lanes[l];
      if (parts[l] <= 0)
        continue;
      lane.pending += parts[l];
      lane.pending_blocks.push_back(b);
      if (lane.pending >= cfg_.bucket_bytes) {
        if (cfg_.overlap_grad_reduce)
          emit_bucket(blk.stage, lane, lane.pending, lane.pending_blocks, last, static_cast<int>(lane.deferred.size()));
        lane.deferred.push_back({cfg_.overlap_grad_reduce ? 0.0 : lane.pending, lane.pending_blocks});
        lane.pending = 0;
        lane.pending_blocks.clear();
      }
    }
    return;
  }
  // ZeRO-2/3: this micro-batch's gradient of the block, reduce-scattered at once.
  // "L3.mb17.reduce_scatter": numbered names, so that micro-batches add none to the table.
  const std::string prefix = blk.plan.name + ".mb";
  auto name                = [&](const char* what) { return OpName(prefix, static_cast<uint64_t>(mb), what); };
  StreamKind free_on       = zero_stream(StreamKind::comm);
  if (!blk.plan.tensors.empty()) // DeepSpeed: per parameter or per reduce_bucket_size bucket
    last = reduce_tensors(b, mb, last);
  else
    for (size_t l = 0; l < s.lanes.size(); ++l)
      if (s.lanes[l].group >= 0 && parts[l] > 0)
        last = dag_.add(collective_op(s.gpu, free_on, CollectiveKind::reduce_scatter, s.lanes[l].group, parts[l],
                                      name(s.lanes[l].experts ? ".experts.reduce_scatter" : ".reduce_scatter")),
                        {last});
  if (cfg_.offload_optimizer != OffloadTarget::none) {
    last = dag_.add(
        host_copy_op(s.gpu, StreamKind::d2h, s.gpu, s.host, shard(b, full), name(".grads_d2h"), cfg_.offload_pinned),
        {last});
    free_on = StreamKind::d2h;
  }
  s.buckets_in_flight.push_back(dag_.free(blk.bucket, s.gpu, free_on, name(".free_grad_bucket"), {last}));
  blk.grads_ready = last;
}

void TrainingStepGenerator::emit_bucket(int stage, const BucketLane& lane, double bytes, const std::vector<int>& blocks,
                                        OpId after, int index)
{
  Stage& s         = stages_[stage];
  std::string name = (cfg_.pp > 1 ? "stage" + std::to_string(stage) + "." : std::string()) +
                     (cfg_.zero == 0 ? "ddp" : "zero1") + (lane.experts ? ".expert_bucket" : ".bucket") +
                     std::to_string(index);
  OpId last = after;
  if (lane.group >= 0) {
    CollectiveKind kind = cfg_.zero == 0 ? CollectiveKind::all_reduce : CollectiveKind::reduce_scatter;
    last                = dag_.add(collective_op(s.gpu, zero_stream(StreamKind::comm), kind, lane.group, bytes,
                                                 name + "." + collective_name(kind)),
                                   {after});
  }
  // Offload: this rank's shard of the bucket (the experts' over their edp group).
  double host = shard(bytes) * (lane.experts ? cfg_.expert_shard_scale() : 1.0);
  if (cfg_.offload_optimizer != OffloadTarget::none)
    last = dag_.add(host_copy_op(s.gpu, StreamKind::d2h, s.gpu, s.host, host, name + ".grads_d2h", cfg_.offload_pinned),
                    {last});
  for (int b : blocks)
    blocks_[b].grads_ready = last;
  if (ddp_bucket_copies())
    s.ddp_copy_back.emplace_back(last, bytes, blocks);
}

void TrainingStepGenerator::flush_buckets()
{
  if (cfg_.zero > 1)
    return;
  for (size_t p = 0; p < stages_.size(); ++p) {
    Stage& s = stages_[p];
    // Without overlap every bucket waits for the end of backward; sizes stay the same.
    OpId end = dag_.stream_tail(s.gpu, StreamKind::compute);
    for (BucketLane& lane : s.lanes) {
      int index = 0;
      for (auto& [bytes, blocks] : lane.deferred) {
        if (bytes > 0)
          emit_bucket(static_cast<int>(p), lane, bytes, blocks, end, index);
        ++index;
      }
      if (lane.pending > 0)
        emit_bucket(static_cast<int>(p), lane, lane.pending, lane.pending_blocks, end, index);
      lane.pending = 0;
      lane.pending_blocks.clear();
    }
    // DDP's finalize_backward: each bucket copied back into the gradients once reduced.
    int index = 0;
    for (auto& [reduced, bytes, blocks] : s.ddp_copy_back) {
      OpId back = dag_.add(kernel_op(s.gpu, KernelClass::elementwise, Dtype::fp32, 0, 2 * bytes, 0,
                                     OpName("ddp.bucket", static_cast<uint64_t>(index++), ".copy_to_grads")),
                           {reduced});
      for (int b : blocks)
        blocks_[b].grads_ready = back;
    }
    s.ddp_copy_back.clear();
  }
}

} // namespace memwall

#include "workloads/training/GradientSync.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {

GradientSync::GradientSync(StepBuild& step, TensorCollectives& calls)
    : step_(step), calls_(calls), stages_(step.stages.size()), closes_(step.blocks.size())
{
  for (const StepStage& s : step.stages) // none under ZeRO-2/3
    for (size_t k = 0; k < s.buckets.size(); ++k)
      closes_[static_cast<size_t>(s.buckets[k].blocks.back())].push_back(k);
}

bool GradientSync::ddp_bucket_copies() const
{
  return step_.cfg.zero == 0 && step_.cfg.replicas() > 1 && step_.stack->ddp_copies_gradients();
}

void GradientSync::alloc_gradients(int b)
{
  const TrainingConfig& cfg = step_.cfg;
  OpDag& dag                = step_.dag;
  StepBlock& blk            = step_.blocks[b];
  const StepStage& s        = step_.stage_of(b);
  if (blk.plan.params <= 0)
    return;
  double full     = blk.plan.params * step_.state_bytes.gradients;
  bool offload    = cfg.offload_optimizer != OffloadTarget::none;
  const bool once = accumulates_unsharded();
  if (blk.backwards == 0) {
    if (once) // FSDP2's unsharded_accumulated_grad, in the reduce dtype
      blk.accumulated = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::gradients, full,
                                  blk.plan.name + ".grads_unsharded");
    if (cfg.zero <= 1)
      blk.grads = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::gradients, full, blk.plan.name + ".grads");
    else if (!offload && !once) // accumulating unsharded, the shard is made by the reduce-scatter
      blk.grads = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::gradients, step_.shard(b, full),
                            blk.plan.name + ".grad_shard");
    if (offload) // fp32 gradient shard in host DRAM, for every rank on the socket
      blk.host_grads =
          dag.alloc(s.gpu, StreamKind::compute, s.host, MemCategory::gradients,
                    4.0 * step_.shard(b, blk.plan.params) * step_.host_share(s, false), blk.plan.name + ".host_grads");
  }
  // Accumulating unsharded: autograd writes the micro-batch's gradient in the parameters'
  // dtype (the gathered bf16), summed into the buffer after the block's backward.
  if (once) {
    blk.bucket = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::workspace,
                           blk.plan.params * step_.gathered_bytes_per_param(),
                           OpName(blk.plan.name + ".mb", static_cast<uint64_t>(blk.backwards), ".grad"));
    return;
  }
  // ZeRO-2/3: the block's full gradient of this micro-batch is built in a bucket; with
  // `buckets_in_flight` buckets still reducing, backward waits for the oldest.
  if (cfg.zero >= 2) {
    blk.bucket                  = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::workspace, full,
                                            OpName(blk.plan.name + ".mb", static_cast<uint64_t>(blk.backwards), ".grad_bucket"));
    std::deque<OpId>& in_flight = stages_[blk.stage].in_flight;
    if (static_cast<int64_t>(in_flight.size()) >= cfg.buckets_in_flight) {
      dag.depend(dag.last_alloc_or_free(), in_flight.front());
      in_flight.pop_front();
    }
  }
}

void GradientSync::reduce_gradients(int b, int64_t mb)
{
  const TrainingConfig& cfg = step_.cfg;
  OpDag& dag                = step_.dag;
  StepBlock& blk            = step_.blocks[b];
  const StepStage& s        = step_.stage_of(b);
  StageBuckets& buckets     = stages_[blk.stage];
  if (accumulates_unsharded()) { // FSDP2 under a pipeline: summed now, reduced as the chunk ends
    if (blk.plan.params > 0)
      accumulate(b, mb);
    reduce_chunk(b);
    return;
  }
  if (blk.plan.params <= 0)
    return;
  double full = blk.plan.params * step_.state_bytes.gradients;
  if (cfg.zero <= 1 && blk.backwards < cfg.micro_batches())
    return;                // no_sync: nothing waits on this pass, so it may repeat as a chain (OpDag)
  if (ddp_bucket_copies()) // grad * (1 / dp) into the bucket's view (Reducer::mark_variable_ready_dense)
    dag.add(kernel_op(s.gpu, KernelClass::elementwise, Dtype::fp32, 0, 2 * full, 0,
                      blk.plan.name + ".ddp.copy_into_bucket"));
  OpId last = dag.stream_tail(s.gpu, StreamKind::compute);
  if (cfg.zero <= 1) {
    // The buckets this block's gradient completes: reduced now, or once backward ends.
    for (size_t k : closes_[static_cast<size_t>(b)]) {
      if (cfg.overlap_grad_reduce)
        emit_bucket(blk.stage, s.buckets[k], last);
      else
        buckets.deferred.push_back(k);
    }
    return;
  }
  // ZeRO-2/3: this micro-batch's gradient of the block, reduce-scattered at once.
  // "L3.mb17.reduce_scatter": numbered names, so that micro-batches add none to the table.
  const std::string prefix = blk.plan.name + ".mb";
  auto name                = [&](const char* what) { return OpName(prefix, static_cast<uint64_t>(mb), what); };
  StreamKind free_on       = step_.zero_stream(StreamKind::comm);
  auto [dense, experts]    = step_.dense_and_experts(b, full);
  const double parts[2]    = {dense, experts}; // per lane: dense gradients, routed experts'
  if (!blk.plan.tensors.empty())               // DeepSpeed: per parameter or per reduce_bucket_size bucket
    last = reduce_tensors(b, mb, last);
  else
    for (size_t l = 0; l < s.reduce_groups.size(); ++l)
      if (s.reduce_groups[l] >= 0 && parts[l] > 0)
        last = dag.add(collective_op(s.gpu, free_on, CollectiveKind::reduce_scatter, s.reduce_groups[l], parts[l],
                                     name(l == 1 ? ".experts.reduce_scatter" : ".reduce_scatter")),
                       {last});
  if (cfg.offload_optimizer != OffloadTarget::none) {
    last    = dag.add(host_copy_op(s.gpu, StreamKind::d2h, s.gpu, s.host, step_.shard(b, full), name(".grads_d2h"),
                                   cfg.offload_pinned),
                      {last});
    free_on = StreamKind::d2h;
  }
  buckets.in_flight.push_back(dag.free(blk.bucket, s.gpu, free_on, name(".free_grad_bucket"), {last}));
  blk.grads_ready = last;
}

bool GradientSync::accumulates_unsharded() const
{
  return step_.cfg.zero == 3 && step_.stack->accumulates_unsharded(step_.cfg);
}

// FSDP2 (_fsdp_param.py): the first micro-batch's gradient converted to the reduce dtype
// (to_accumulated_grad_if_needed), each later one added in
// (accumulate_unsharded_grad_if_needed). Once the last backward of the step has run
// through a block's whole model chunk, every block of the chunk is reduce-scattered
// (torch.distributed.pipelining's REDUCE_GRAD action, scheduled right after a stage's
// last backward, after its gradient's send: post_backward of each unit of the chunk,
// its shard made by foreach_reduce) and the compute stream waits for them
// (_root_post_backward_final_callback) from the stage's next pass on (settle), where
// the unsharded sums are freed.
void GradientSync::accumulate(int b, int64_t mb)
{
  OpDag& dag         = step_.dag;
  StepBlock& blk     = step_.blocks[b];
  const StepStage& s = step_.stage_of(b);
  auto name          = [&](const char* what) { return OpName(blk.plan.name + ".mb", static_cast<uint64_t>(mb), what); };
  const double n = blk.plan.params, g = step_.state_bytes.gradients, w = step_.gathered_bytes_per_param();
  const bool first = blk.backwards == 1;
  dag.add(kernel_op(s.gpu, KernelClass::elementwise, Dtype::fp32, first ? 0.0 : n, n * (w + g + (first ? 0.0 : g)), 0,
                    name(first ? ".grad_to_fp32" : ".accumulate_grad")));
  dag.free(blk.bucket, s.gpu, StreamKind::compute, name(".free_grad"));
}

void GradientSync::reduce_chunk(int b)
{
  OpDag& dag                    = step_.dag;
  const StepStage& s            = step_.stage_of(b);
  const std::vector<int>& chunk = s.chunks[static_cast<size_t>(step_.blocks[b].chunk)];
  if (chunk.front() != b || step_.blocks[b].backwards < step_.cfg.micro_batches())
    return; // the chunk's backward goes on
  const OpId end = dag.stream_tail(s.gpu, StreamKind::compute);
  auto& awaited  = stages_[static_cast<size_t>(step_.blocks[b].stage)].awaited;
  for (int c : chunk) {
    StepBlock& blk = step_.blocks[c];
    if (blk.plan.params <= 0)
      continue;
    const double full = blk.plan.params * step_.state_bytes.gradients;
    blk.grads         = dag.alloc(s.gpu, StreamKind::comm, s.gpu, MemCategory::gradients, step_.shard(c, full),
                                  blk.plan.name + ".grad_shard", {end});
    OpId last         = dag.last_alloc_or_free();
    if (s.dp_group >= 0)
      last = dag.add(collective_op(s.gpu, StreamKind::comm, CollectiveKind::reduce_scatter, s.dp_group, full,
                                   blk.plan.name + ".reduce_scatter"),
                     {last});
    blk.grads_ready = last;
    awaited.emplace_back(c, last);
  }
}

void GradientSync::settle(int stage)
{
  auto& awaited = stages_[static_cast<size_t>(stage)].awaited;
  for (const auto& [c, last] : awaited)
    step_.dag.free(step_.blocks[c].accumulated, step_.stages[static_cast<size_t>(stage)].gpu, StreamKind::compute,
                   step_.blocks[c].plan.name + ".free_grads_unsharded", {last});
  awaited.clear();
}

OpId GradientSync::reduce_tensors(int b, int64_t mb, OpId after)
{
  OpDag& dag               = step_.dag;
  const StepBlock& blk     = step_.blocks[b];
  const StepStage& s       = step_.stage_of(b);
  const double g           = step_.state_bytes.gradients;
  StreamKind stream        = step_.zero_stream(StreamKind::comm);
  const std::string prefix = blk.plan.name + ".mb";
  const auto number        = static_cast<uint64_t>(mb);
  auto name                = [&](const std::string& what) { return OpName(prefix, number, what); };
  // DeepSpeed copies each gradient into its contiguous bucket and divides the bucket by
  // the ranks before reducing it (contiguous_gradients, average_tensor).
  const Dtype dtype = step_.shape.gemm_dtype;
  double full       = blk.plan.params * g;
  Op copy           = kernel_op(s.gpu, KernelClass::elementwise, dtype, 0, 2 * full, 0, name(".ipg_copy"));
  OpId last         = dag.add(std::move(copy), {after});
  Op divide         = kernel_op(s.gpu, KernelClass::elementwise, dtype, blk.plan.params, 2 * full, 0, name(".average"));
  divide.stream     = stream;
  last              = dag.add(std::move(divide), {last});
  if (s.dp_group < 0)
    return last;
  if (calls_.calls().per_parameter) {
    for (size_t t = blk.plan.tensors.size(); t-- > 0;)
      last = calls_.issue(s, stream, CollectiveKind::reduce_scatter, blk.plan.tensors[t] * g,
                          {prefix, number, ".t" + std::to_string(t) + ".reduce_scatter"}, last);
    return last;
  }
  // DeepSpeed fills its bucket parameter by parameter and reduces it before a parameter
  // that would overflow it (reduce_independent_p_g_buckets_and_remove_grads): a bucket
  // holds at least one whole gradient, so a block takes at most one call per tensor,
  // however small the bucket (reduce_bucket_size: 1 asked for one call per element).
  double calls = std::min(std::ceil(blk.plan.params / calls_.calls().reduce_bucket_numel),
                          static_cast<double>(std::max<size_t>(blk.plan.tensors.size(), 1)));
  for (double c = 0; c < calls; ++c)
    last = calls_.issue(s, stream, CollectiveKind::reduce_scatter, full / calls,
                        {prefix, number, ".bucket" + std::to_string(static_cast<int>(c)) + ".reduce_scatter"}, last);
  return last;
}

void GradientSync::emit_bucket(int stage, const GradBucket& bucket, OpId after)
{
  const TrainingConfig& cfg = step_.cfg;
  OpDag& dag                = step_.dag;
  const StepStage& s        = step_.stages[stage];
  const size_t lane         = bucket.lane;
  const double bytes        = bucket.bytes;
  const bool experts        = lane == 1;
  const std::string name    = bucket_name(step_, stage, bucket);
  OpId last                 = after;
  if (s.reduce_groups[lane] >= 0) {
    CollectiveKind kind = cfg.zero == 0 ? CollectiveKind::all_reduce : CollectiveKind::reduce_scatter;
    last = dag.add(collective_op(s.gpu, step_.zero_stream(StreamKind::comm), kind, s.reduce_groups[lane], bytes,
                                 name + "." + collective_name(kind)),
                   {after});
  }
  // Offload: this rank's shard of the bucket (the experts' over their edp group).
  double host = step_.shard(bytes) * (experts ? cfg.expert_shard_scale() : 1.0);
  if (cfg.offload_optimizer != OffloadTarget::none)
    last = dag.add(host_copy_op(s.gpu, StreamKind::d2h, s.gpu, s.host, host, name + ".grads_d2h", cfg.offload_pinned),
                   {last});
  // A bucket with nothing to reduce or copy (routed experts with no peers holding them)
  // leaves a block's gradients to its other lane's reduction, when it has one.
  const bool nothing = last == after;
  for (int b : bucket.blocks)
    if (!nothing || step_.blocks[b].grads_ready == OpDag::none)
      step_.blocks[b].grads_ready = last;
  if (ddp_bucket_copies())
    stages_[stage].copy_back.emplace_back(last, bytes, bucket.blocks);
}

void GradientSync::flush_buckets()
{
  for (size_t p = 0; p < stages_.size(); ++p)
    settle(static_cast<int>(p));
  if (step_.cfg.zero > 1)
    return;
  OpDag& dag = step_.dag;
  for (size_t p = 0; p < stages_.size(); ++p) {
    const StepStage& s    = step_.stages[p];
    StageBuckets& buckets = stages_[p];
    // Without overlap every bucket waits for the end of backward; sizes stay the same.
    OpId end = dag.stream_tail(s.gpu, StreamKind::compute);
    std::stable_sort(buckets.deferred.begin(), buckets.deferred.end(),
                     [&](size_t a, size_t b) { return s.buckets[a].lane < s.buckets[b].lane; });
    for (size_t k : buckets.deferred)
      emit_bucket(static_cast<int>(p), s.buckets[k], end);
    buckets.deferred.clear();
    // DDP's finalize_backward: each bucket copied back into the gradients once reduced.
    int index = 0;
    for (auto& [reduced, bytes, blocks] : buckets.copy_back) {
      OpId back = dag.add(kernel_op(s.gpu, KernelClass::elementwise, Dtype::fp32, 0, 2 * bytes, 0,
                                    OpName("ddp.bucket", static_cast<uint64_t>(index++), ".copy_to_grads")),
                          {reduced});
      for (int b : blocks)
        step_.blocks[b].grads_ready = back;
    }
    buckets.copy_back.clear();
  }
}

} // namespace memwall

// ZeRO-3 tensor by tensor, for a stack whose blocks list their tensors (DeepSpeed's,
// stage3.py and partition_parameters.py): parameters are gathered one tensor at a time
// when a module runs, not a block at once. The stack answers which tensors persist on
// every rank and which each use gathers (TrainingStack::plan_fetches); this file emits
// one all-gather per tensor gathered, and one reduce-scatter per tensor's gradient
// (per_parameter_collectives) or per reduce_bucket_size bucket.
// With per_parameter_collectives (DeepSpeed 0.3-0.4, PyTorch <= 1.9) every call also
// costs what building its lists costs: torch.zeros of the gathered tensor and
// torch.cuda.synchronize(), a Python narrow() per rank, and ProcessGroupNCCL's copy of
// each rank's part out of (all-gather) or into (reduce-scatter) a flat buffer, issued
// by the host one by one. The host's time is a delay on the rank's host stream; the
// device waits for it where the code synchronises.
// Memory: a use holds its block's gathered (non-persistent) tensors, as ParamGather.cpp.
#include "workloads/training/TrainingStepGenerator.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace memwall {

bool TrainingStepGenerator::per_tensor_gathers() const
{
  if (cfg_.zero != 3)
    return false;
  for (const Block& b : blocks_)
    if (!b.plan.tensors.empty())
      return true;
  return false;
}

double TrainingStepGenerator::persistent_params(int b) const
{
  return cfg_.zero == 3 ? stack_->persistent_elements(blocks_[b].plan.tensors) : 0.0;
}

StreamKind TrainingStepGenerator::zero_stream(StreamKind own) const
{
  return stack_->serial_collectives(cfg_) ? StreamKind::compute : own;
}

void TrainingStepGenerator::plan_tensor_fetches()
{
  std::vector<ParamUse> uses(uses_.size());
  for (size_t j = 0; j < uses_.size(); ++j) {
    const BlockPlan& p = blocks_[uses_[j]].plan;
    uses[j]            = {&p.tensors, uses_[j], use_forward_[j],
                          !use_forward_[j] && SavedActivations(cfg_.recompute).checkpoints(p)};
  }
  fetches_ = stack_->plan_fetches(uses);
}

OpId TrainingStepGenerator::list_collective(const Stage& s, StreamKind stream, CollectiveKind kind, double bytes,
                                            const CallName& call, OpId after)
{
  // "L3.use41.t2.all_gather": numbered names, so that uses add none to the table.
  auto named          = [&](const std::string& what) { return OpName(call.prefix, call.number, call.suffix + what); };
  const OpName name   = named("");
  const TensorCalls d = stack_->tensor_calls();
  if (!d.per_parameter) {
    Op c = collective_op(s.gpu, stream, kind, s.dp_group, bytes, name);
    return dag_.add(std::move(c), {after});
  }
  const double ranks = static_cast<double>(cfg_.replicas());
  auto host          = [&](double seconds, const char* what, std::initializer_list<OpId> deps) {
    Op h;
    h.kind    = OpKind::host_compute;
    h.stream  = StreamKind::host;
    h.device  = s.gpu;
    h.seconds = seconds;
    h.name    = named(what);
    return dag_.add(std::move(h), deps);
  };
  auto device = [&](double traffic, const char* what, std::initializer_list<OpId> deps) {
    Op k     = kernel_op(s.gpu, KernelClass::elementwise, shape_.gemm_dtype, 0, traffic, 0, named(what));
    k.stream = stream;
    return dag_.add(std::move(k), deps);
  };
  if (kind == CollectiveKind::all_gather) {
    // _allgather_param: torch.zeros, torch.cuda.synchronize(), a narrow() per rank;
    // all_gather copies each rank's part out of its flat output after the collective.
    OpId zeros  = device(bytes, ".zeros", {after});
    OpId views  = host(ranks * d.host_seconds_per_view, ".views", {zeros});
    OpId gather = dag_.add(collective_op(s.gpu, stream, kind, s.dp_group, bytes, name), {views});
    OpId issued = host(ranks * d.host_seconds_per_copy, ".issue_copies", {views});
    return device(2 * bytes, ".copy_out", {gather, issued});
  }
  // _reduce_scatter_gradient: a narrow() per rank, each copied into the flat input.
  OpId views  = host(ranks * (d.host_seconds_per_view + d.host_seconds_per_copy), ".views", {after});
  OpId copied = device(2 * bytes, ".copy_in", {views});
  return dag_.add(collective_op(s.gpu, stream, kind, s.dp_group, bytes, name), {copied});
}

OpId TrainingStepGenerator::gather_tensors(const Stage& s, size_t use, OpId after)
{
  const Block& blk  = blocks_[uses_[use]];
  const double gb   = state_bytes_.gathered > 0 ? state_bytes_.gathered : weight_bytes_per_param();
  StreamKind stream = zero_stream(StreamKind::gather);
  OpId last         = after;
  for (const auto& [t, elements] : fetches_[use])
    last = list_collective(
        s, stream, CollectiveKind::all_gather, elements * gb,
        {blk.plan.name + ".use", static_cast<uint64_t>(use), ".t" + std::to_string(t) + ".all_gather"}, last);
  return last;
}

OpId TrainingStepGenerator::reduce_tensors(int b, int64_t mb, OpId after)
{
  Block& blk               = blocks_[b];
  const Stage& s           = stage_of(b);
  const double g           = gradient_bytes_per_param();
  StreamKind stream        = zero_stream(StreamKind::comm);
  const std::string prefix = blk.plan.name + ".mb";
  const auto number        = static_cast<uint64_t>(mb);
  auto name                = [&](const std::string& what) { return OpName(prefix, number, what); };
  // DeepSpeed copies each gradient into its contiguous bucket and divides the bucket by
  // the ranks before reducing it (contiguous_gradients, average_tensor).
  double full = blk.plan.params * g;
  Op copy     = kernel_op(s.gpu, KernelClass::elementwise, shape_.gemm_dtype, 0, 2 * full, 0, name(".ipg_copy"));
  OpId last   = dag_.add(std::move(copy), {after});
  Op divide =
      kernel_op(s.gpu, KernelClass::elementwise, shape_.gemm_dtype, blk.plan.params, 2 * full, 0, name(".average"));
  divide.stream = stream;
  last          = dag_.add(std::move(divide), {last});
  if (s.dp_group < 0)
    return last;
  const TensorCalls calls_of = stack_->tensor_calls();
  if (calls_of.per_parameter) {
    for (size_t t = blk.plan.tensors.size(); t-- > 0;)
      last = list_collective(s, stream, CollectiveKind::reduce_scatter, blk.plan.tensors[t] * g,
                             {prefix, number, ".t" + std::to_string(t) + ".reduce_scatter"}, last);
    return last;
  }
  // DeepSpeed fills its bucket parameter by parameter and reduces it before a parameter
  // that would overflow it (reduce_independent_p_g_buckets_and_remove_grads): a bucket
  // holds at least one whole gradient, so a block takes at most one call per tensor,
  // however small the bucket (reduce_bucket_size: 1 asked for one call per element).
  double calls = std::min(std::ceil(blk.plan.params / calls_of.reduce_bucket_numel),
                          static_cast<double>(std::max<size_t>(blk.plan.tensors.size(), 1)));
  for (double c = 0; c < calls; ++c)
    last = list_collective(s, stream, CollectiveKind::reduce_scatter, full / calls,
                           {prefix, number, ".bucket" + std::to_string(static_cast<int>(c)) + ".reduce_scatter"}, last);
  return last;
}

} // namespace memwall

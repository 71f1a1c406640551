#include "workloads/training/TensorCollectives.hpp"

namespace memwall {

OpId TensorCollectives::issue(const StepStage& s, StreamKind stream, CollectiveKind kind, double bytes,
                              const CallName& call, OpId after)
{
  auto named        = [&](const std::string& what) { return OpName(call.prefix, call.number, call.suffix + what); };
  const OpName name = named("");
  OpDag& dag        = step_.dag;
  if (!calls_.per_parameter) {
    Op c = collective_op(s.gpu, stream, kind, s.dp_group, bytes, name);
    return dag.add(std::move(c), {after});
  }
  const double ranks = static_cast<double>(step_.cfg.replicas());
  auto host          = [&](double seconds, const char* what, std::initializer_list<OpId> deps) {
    return dag.add(host_delay_op(s.gpu, seconds, named(what)), deps);
  };
  auto device = [&](double traffic, const char* what, std::initializer_list<OpId> deps) {
    Op k     = kernel_op(s.gpu, KernelClass::elementwise, step_.shape.gemm_dtype, 0, traffic, 0, named(what));
    k.stream = stream;
    return dag.add(std::move(k), deps);
  };
  if (kind == CollectiveKind::all_gather) {
    // _allgather_param: torch.zeros, torch.cuda.synchronize(), a narrow() per rank;
    // all_gather copies each rank's part out of its flat output after the collective.
    OpId zeros  = device(bytes, ".zeros", {after});
    OpId views  = host(ranks * calls_.host_seconds_per_view, ".views", {zeros});
    OpId gather = dag.add(collective_op(s.gpu, stream, kind, s.dp_group, bytes, name), {views});
    OpId issued = host(ranks * calls_.host_seconds_per_copy, ".issue_copies", {views});
    return device(2 * bytes, ".copy_out", {gather, issued});
  }
  // _reduce_scatter_gradient: a narrow() per rank, each copied into the flat input.
  OpId views  = host(ranks * (calls_.host_seconds_per_view + calls_.host_seconds_per_copy), ".views", {after});
  OpId copied = device(2 * bytes, ".copy_in", {views});
  return dag.add(collective_op(s.gpu, stream, kind, s.dp_group, bytes, name), {copied});
}

} // namespace memwall

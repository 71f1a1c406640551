// The replay's records (ReplayRecords.hpp).
#include "sim/replay/ReplayRecords.hpp"

namespace memwall {

// All of them, indexed by op id, unless only the summary is wanted: then none, and the
// ops of the first GPU holding memory (the breakdown's GPU, StepReport's busiest_gpu:
// pools are ordered by device) and its node's host compute add their intervals as they end.
void ReplayRecords::keep(size_t from, size_t to)
{
  if (!summary_only_) {
    ops_.resize(to);
    return;
  }
  DeviceRef gpu = intervals_.gpu;
  chains_.visit(from, to, [&](const Op& op) {
    if ((op.kind == OpKind::alloc || op.kind == OpKind::free) && op.pool.kind == DeviceKind::gpu &&
        (gpu.node < 0 || op.pool < gpu))
      gpu = op.pool;
  });
  if (!(gpu == intervals_.gpu)) // what was added belonged to another GPU
    intervals_ = StepIntervals{.gpu = gpu};
  summary_op_.resize(to - index_.base, 0);
  for (size_t v = from; v < to; ++v) {
    const Op& op = dag_.op(static_cast<OpId>(v));
    // A chain's members share its device: whether any of their kinds is read.
    summary_op_[v - index_.base] =
        gpu.node >= 0 && (op.kind == OpKind::chain ? intervals_.reads(OpKind::host_compute, op.device) ||
                                                         intervals_.reads(OpKind::kernel, op.device)
                                                   : intervals_.reads(op.kind, op.device));
  }
}

void ReplayRecords::open(OpId id, const Op& op, double now)
{
  if (summary_only_) {
    if (summary_op_[id - index_.base])
      summary_start_[id] = now;
    return;
  }
  OpRecord& rec = ops_[id];
  rec.name      = op.name;
  rec.kind      = op.kind;
  rec.stream    = op.stream;
  rec.phase     = op.phase;
  rec.pageable  = op.pageable;
  rec.device    = op.device;
  rec.start     = now;
  rec.bytes     = op.bytes;
  rec.flops     = op.flops;
}

void ReplayRecords::close(OpId id, const Op& op, double end)
{
  if (summary_only_) {
    if (!summary_op_[id - index_.base])
      return;
    auto it = summary_start_.find(id);
    intervals_.add(op.kind, op.stream, op.device, it->second, end, 0, op.phase, op.pageable);
    summary_start_.erase(it);
    return;
  }
  OpRecord& rec = ops_[id];
  rec.end       = end;
  // An allocation takes time only when unified memory evicts to make room for it.
  if (paging_ && rec.kind == OpKind::alloc && rec.end > rec.start)
    rec.paging_s = rec.end - rec.start;
}

void ReplayRecords::span(OpId id, const Op& op, double start, double end)
{
  if (summary_only_) {
    if (summary_op_[id - index_.base])
      intervals_.add(op.kind, op.stream, op.device, start, end, 0, op.phase, op.pageable);
    return;
  }
  open(id, op, start);
  ops_[id].end = end;
}

} // namespace memwall

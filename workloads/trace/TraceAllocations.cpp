#include "workloads/trace/TraceAllocations.hpp"

#include "workloads/trace/TraceNames.hpp"

#include <algorithm>

namespace memwall {

void TraceAllocations::allocate_before_trace()
{
  std::map<int, bool> seen;
  for (const TraceMemoryEvent& m : t_.memory) {
    if (!cuda_memory(m) || seen[m.device_id])
      continue;
    seen[m.device_id] = true;
    int64_t before    = m.total_allocated - m.bytes;
    if (before <= 0)
      continue;
    const DeviceRef& gpu      = gpus_.at(m.device_id);
    before_[m.device_id]      = dag_.alloc(gpu, StreamKind::host, gpu, MemCategory::other, static_cast<double>(before),
                                           "allocated before the trace");
    before_left_[m.device_id] = before;
  }
  // A GPU the allocator said nothing of still has its memory reported (as 0 B), and
  // is the one the step's breakdown reads.
  for (const auto& [dev, gpu] : gpus_)
    if (!seen[dev])
      dag_.alloc(gpu, StreamKind::host, gpu, MemCategory::other, 0,
                 "no allocator events in the trace (record with profile_memory=True)");
}

std::vector<const std::string*> TraceAllocations::scope_at(int64_t tid, int64_t ts)
{
  Scope& s = scopes_[tid];
  if (!s.ready) {
    auto lo = std::lower_bound(t_.cpu_ops.begin(), t_.cpu_ops.end(), tid,
                               [](const TraceCpuOp& o, int64_t t) { return o.tid < t; });
    s.next  = static_cast<size_t>(lo - t_.cpu_ops.begin());
    s.ready = true;
  }
  while (s.next < t_.cpu_ops.size() && t_.cpu_ops[s.next].tid == tid && t_.cpu_ops[s.next].start_ns <= ts) {
    const TraceCpuOp& o = t_.cpu_ops[s.next++];
    while (!s.open.empty() && s.open.back()->start_ns + s.open.back()->dur_ns <= o.start_ns)
      s.open.pop_back();
    s.open.push_back(&o);
  }
  while (!s.open.empty() && s.open.back()->start_ns + s.open.back()->dur_ns < ts)
    s.open.pop_back();
  std::vector<const std::string*> names;
  for (const TraceCpuOp* o : s.open)
    if (o->start_ns + o->dur_ns >= ts)
      names.push_back(&t_.names[o->name]);
  return names;
}

void TraceAllocations::on_memory(const TraceMemoryEvent& m)
{
  const DeviceRef& gpu = gpus_.at(m.device_id);
  auto& live           = live_[m.device_id];
  if (m.bytes > 0) {
    MemCategory c = scope_category(scope_at(m.tid, m.ts_ns));
    live[m.addr]  = dag_.alloc(gpu, StreamKind::host, gpu, c, static_cast<double>(m.bytes), "alloc");
    return;
  }
  if (m.bytes == 0)
    return;
  auto it = live.find(m.addr);
  if (it != live.end()) {
    dag_.free(it->second, gpu, StreamKind::host, "free");
    live.erase(it);
    return;
  }
  // A block allocated before the trace began.
  int64_t size = -m.bytes;
  auto b       = before_.find(m.device_id);
  if (b == before_.end() || before_left_[m.device_id] < size)
    return;
  Tensor part = b->second;
  part.bytes  = static_cast<double>(size);
  before_left_[m.device_id] -= size;
  dag_.free(part, gpu, StreamKind::host, "free");
}

} // namespace memwall

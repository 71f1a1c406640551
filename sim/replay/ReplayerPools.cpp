// The memory pools of the Replayer (Replayer.hpp): one per device, made at its first
// alloc or free; every alloc and free lands in its pool after the runs' ones due there
// before it (DueMemory).
#include "sim/replay/Replayer.hpp"

namespace memwall {

// The pool of a device, made at its first alloc or free.
MemoryPool& Replayer::pool(const DeviceRef& d)
{
  if (MemoryPool* kept = pools_.find(d))
    return *kept;
  const ClusterSpec& c = platform_.cluster();
  double capacity      = 0;
  std::string hardware;
  switch (d.kind) {
    case DeviceKind::gpu:
      capacity = c.node.gpu.memory_bytes;
      hardware = c.node.gpu.id;
      break;
    case DeviceKind::host:
      capacity = c.node.dram_bytes / c.node.sockets;
      hardware = c.node.id + ".dram";
      break;
    case DeviceKind::nvme:
      capacity = c.node.nvme_bytes;
      hardware = c.node.id + ".nvme";
      break;
  }
  auto p = std::make_unique<MemoryPool>(d, hardware, capacity, dag_.represents(d), options_.memory_timelines);
  if (d.kind == DeviceKind::gpu && !options_.allocator.empty())
    p->use_allocator(options_.allocator, allocator_registry().make(options_.allocator));
  return pools_.keep(d, std::move(p));
}

void Replayer::apply_memory_op(OpId id, const Op& op, double now)
{
  if (paging_on()) { // no run holds an alloc or free under unified memory
    if (op.kind == OpKind::alloc && op.pool.kind == DeviceKind::gpu)
      return alloc_with_paging(id, op);
    if (op.kind == OpKind::free && free_managed(op))
      return;
  }
  MemoryPool& p = pool(op.pool);
  due_memory_.apply(p, now); // runs' ops on it up to this instant come first
  DueMemory::apply_op(p, op, now);
}

} // namespace memwall

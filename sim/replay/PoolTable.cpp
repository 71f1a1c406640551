// The memory pools of the replay (PoolTable.hpp): one per device, with the capacity of
// its memory and, on a GPU, the allocator the stack's process runs.
#include "sim/replay/PoolTable.hpp"

namespace memwall {

MemoryPool& PoolTable::make(const DeviceRef& d)
{
  double capacity = 0;
  std::string hardware;
  switch (d.kind) {
    case DeviceKind::gpu:
      capacity = cluster_.node.gpu.memory_bytes;
      hardware = cluster_.node.gpu.id;
      break;
    case DeviceKind::host:
      capacity = cluster_.node.dram_bytes / cluster_.node.sockets;
      hardware = cluster_.node.id + ".dram";
      break;
    case DeviceKind::nvme:
      capacity = cluster_.node.nvme_bytes;
      hardware = cluster_.node.id + ".nvme";
      break;
  }
  auto p = std::make_unique<MemoryPool>(d, hardware, capacity, dag_.represents(d), timelines_);
  if (d.kind == DeviceKind::gpu && allocator_.make)
    p->use_allocator(allocator_.name, allocator_.make());
  MemoryPool& made = *by_device_.emplace(d, std::move(p)).first->second;
  index_[d]        = &made;
  last_            = {d, &made};
  return made;
}

} // namespace memwall

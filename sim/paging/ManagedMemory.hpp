#pragma once
// Residency of one GPU's managed memory, as the UVM driver tracks it: tensors cut into
// 2 MB chunks, each on the GPU or on the host. A kernel touching chunks that are on the
// host faults them in (evicting chunks in the policy's order when HBM is full, the
// evicted ones migrating back to the host); chunks the program mapped for remote access
// are read over PCIe where they lie. This class only counts; the replay turns the
// counts into activities (flows on the PCIe links, the driver's time per fault batch).
//
//   tensor  [ chunk | chunk | chunk | tail ]      2 MB each (chunk_bytes), tail shorter
//   chunk   on the GPU  -> resident; eviction order kept by the EvictionPolicy
//           on the host -> a touch faults: ceil(density x 64 KB pages) faults, then
//                          the whole chunk migrates (the density prefetcher's 2 MB)
#include "sim/result/RunResult.hpp"
#include "sim/paging/EvictionPolicy.hpp"
#include "sim/paging/UnifiedMemoryConfig.hpp"
#include "workloads/dag/OpDag.hpp"

#include <memory>
#include <unordered_map>
#include <vector>

namespace memwall {

// What one piece of bookkeeping moved.
struct Migration {
  double h2d             = 0; // bytes migrated to the GPU
  double d2h             = 0; // bytes evicted back to the host
  double remote          = 0; // bytes the GPU read over PCIe where they lie
  int64_t faults         = 0;
  int64_t evictions      = 0; // chunks
  double thrashing_pages = 0; // 4 KB pages migrated in again after an eviction
  CategoryBytes to_gpu{};     // change of GPU-resident bytes by category
  CategoryBytes to_host{};    // change of host-resident bytes by category
  bool moved() const { return h2d > 0 || d2h > 0 || remote > 0; }
};

class ManagedMemory {
public:
  ManagedMemory(const UnifiedMemoryConfig& cfg, std::unique_ptr<EvictionPolicy> eviction);

  // Where a new tensor's pages are populated.
  enum class Start {
    host,        // written by the CPU (loaded weights, initialised states)
    gpu_if_room, // left on the GPU by an earlier step, as far as free HBM holds them
    gpu,         // first written by a kernel: populated on the GPU, evicting others for room
  };
  // A new managed tensor of `bytes`; `room` is the free HBM. Population moves no data.
  Migration add(uint32_t tensor, MemCategory c, double bytes, Start start, double room);
  // Frees the tensor's pages wherever they are.
  Migration remove(uint32_t tensor);
  bool holds(uint32_t tensor) const { return tensors_.count(tensor) > 0; }
  // A kernel's accesses, its tensors streamed together in proportion (a kernel sweeps its
  // operands side by side). `on_demand`: faults; else a bulk prefetch (no faults).
  Migration access(const std::vector<TensorAccess>& accesses, double room, bool on_demand);
  // Evicts chunks until `bytes` fit in `room`, for an allocation that is not managed.
  Migration make_room(double bytes, double room);
  double resident_bytes() const { return resident_; }

private:
  struct Chunk {
    uint32_t tensor      = 0;
    MemCategory category = MemCategory::other;
    double bytes         = 0;
    bool on_gpu          = false;
    bool evicted         = false; // has left the GPU before: coming back is thrashing
  };
  struct Touch {
    double position; // where in the kernel's sweep, 0..1
    int chunk;
    double bytes;
  };
  int new_chunk(uint32_t tensor, MemCategory c, double bytes);
  // Evicts until `bytes` fit; false when nothing is left to evict.
  bool ensure_room(double bytes, double& room, Migration& m);
  void place_on_gpu(int chunk, Migration& m);
  std::vector<Touch> sweep(const std::vector<TensorAccess>& accesses) const;

  UnifiedMemoryConfig cfg_;
  std::unique_ptr<EvictionPolicy> eviction_;
  std::vector<Chunk> chunks_;
  std::vector<int> free_ids_;
  std::unordered_map<uint32_t, std::vector<int>> tensors_; // tensor id -> its chunks in order
  double resident_ = 0;
};

} // namespace memwall

#pragma once
// Unified memory in the replay (PagingReplay.cpp, sim/paging): each GPU's managed memory
// and counters, the kernels that fault running their steps in turn, the prefetch policy.
#include "sim/paging/ManagedMemory.hpp"
#include "sim/paging/PrefetchPolicy.hpp"
#include "sim/replay/ActivityLauncher.hpp"
#include "sim/replay/PoolTable.hpp"
#include "sim/result/RunResult.hpp"
#include "workloads/dag/OpDag.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace memwall {

class PagingReplay {
public:
  PagingReplay(const OpDag& dag, const UnifiedMemoryConfig& memory, ActivityLauncher& launcher, PoolTable& pools);

  bool on() const { return memory_.enabled(); }
  // An alloc on a GPU: managed tensors placed where their first touch puts them, other
  // allocations making room by evicting.
  void alloc(OpId id, const Op& op);
  // A free of a managed tensor (false: not managed, the pool frees it).
  bool free_managed(const Op& op);
  // A kernel that touches managed memory: its paging steps, then itself.
  void start_kernel(OpId id, const Op& op);
  // Starts the kernel's next step; false when all have run, or `id` is no paged kernel.
  bool start_step(OpId id);
  // An activity of op `id` ended at `now`; `paging`: a transfer, not its own work.
  void activity_ended(OpId id, bool paging, double now)
  {
    if (kernels_.empty() || paging)
      return;
    auto it = kernels_.find(id);
    if (it != kernels_.end())
      it->second.own_end = now;
  }
  bool kernels_paging() const { return !kernels_.empty(); }
  // A paged kernel ended: its paging time in its record and the GPU's stall.
  void finish_kernel(OpId id, OpRecord* rec);
  std::vector<PagingResult> take_results();

private:
  struct Step {
    enum class Kind : uint8_t { driver, evict, migrate, kernel } kind;
    double amount = 0; // seconds (driver) or bytes
    double scale  = 1; // transfer time per byte relative to the link's rate
  };
  struct PagedKernel {
    std::vector<Step> steps;
    size_t next   = 0;
    double remote = 0, ahead_h2d = 0, ahead_d2h = 0; // beside the kernel step
    double exec_start = 0, own_end = 0;
  };
  struct GpuPaging {
    std::unique_ptr<ManagedMemory> memory;
    PagingResult result;
  };

  GpuPaging& gpu_state(const DeviceRef& gpu);
  double hbm_room(const DeviceRef& gpu) { return pools_.pool(gpu).room(); }
  // Applies a Migration to the pools' timelines and the GPU's counters.
  void apply(const DeviceRef& gpu, const Migration& m, const OpName& what);
  void note_demand(const DeviceRef& gpu); // PagingResult::peak_demand_bytes
  std::vector<OpId> kernels_ahead(OpId id, const Op& op, int count) const;
  // A transfer between `gpu` and its host (and the same for each shadow rank), charged
  // to paging; `scale` stretches it (on-demand migration is slower than a copy).
  void start_flow(OpId id, const DeviceRef& gpu, bool to_gpu, double bytes, double scale);

  const OpDag& dag_;
  const UnifiedMemoryConfig& memory_;
  ActivityLauncher& launcher_;
  PoolTable& pools_;
  std::map<DeviceRef, GpuPaging> gpus_;
  std::map<OpId, PagedKernel> kernels_;
  std::unique_ptr<PrefetchPolicy> prefetch_;
};

} // namespace memwall

#pragma once
// Unified memory in the replay (ReplayerPaging.cpp): each GPU's managed memory and
// counters, the kernels that fault running their steps in turn, the prefetch policy.
#include "sim/paging/ManagedMemory.hpp"
#include "sim/paging/PrefetchPolicy.hpp"
#include "sim/result/RunResult.hpp"
#include "workloads/dag/Op.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace memwall {

struct PagingStep {
  enum class Kind : uint8_t { driver, evict, migrate, kernel } kind;
  double amount = 0; // seconds (driver) or bytes
  double scale  = 1; // transfer time per byte relative to the link's rate
};
struct PagedKernel {
  std::vector<PagingStep> steps;
  size_t next   = 0;
  double remote = 0, ahead_h2d = 0, ahead_d2h = 0; // beside the kernel step
  double exec_start = 0, own_end = 0;
};
struct GpuPaging {
  std::unique_ptr<ManagedMemory> memory;
  PagingResult result;
};

struct PagingState {
  std::map<DeviceRef, GpuPaging> gpus;
  std::map<OpId, PagedKernel> kernels;
  std::unique_ptr<PrefetchPolicy> prefetch;
};

} // namespace memwall

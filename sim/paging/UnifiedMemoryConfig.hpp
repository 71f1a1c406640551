#pragma once
// CUDA unified memory (cudaMallocManaged) as a memory mode of the replay: which memory
// categories are managed, the program's hints, and the driver's fault-handling costs.
// The defaults are the open-source UVM driver's constants and the fault costs measured
// with nvprof (calibration/data/uvm.md); `memwall list params` prints each with its source.
#include "workloads/dag/Op.hpp"

#include <bitset>
#include <string>

namespace memwall {

using CategorySet = std::bitset<mem_category_count>;

struct UnifiedMemoryConfig {
  CategorySet managed;           // allocated with cudaMallocManaged; none: explicit memory only
  CategorySet accessed_by;       // cudaMemAdviseSetAccessedBy(GPU): read over PCIe where they lie, never migrated
  bool preferred_host  = false;  // cudaMemAdviseSetPreferredLocation(CPU) for every managed tensor
  std::string prefetch = "none"; // PrefetchPolicy
  std::string eviction = "fifo"; // EvictionPolicy
  // Where weights and optimizer states start: on the GPU as far as they fit, as a previous
  // step left them (warm), or on the host, as just after loading (cold).
  bool warm = true;
  // The framework's allocator still serves every tensor that is not managed (bitsandbytes'
  // paged optimizer states beside PyTorch's caching allocator); false: the program
  // allocates all of it through the driver.
  bool explicit_through_allocator = false;

  double chunk_bytes          = 2.0 * 1024 * 1024; // the driver's root chunk: the unit of residency and eviction
  double big_page_bytes       = 64.0 * 1024;       // a fault migrates its 4 KB page grown to this
  double prefetch_density     = 0.51;              // the density prefetcher completes a region this full
  int faults_per_batch        = 256;               // faults fetched from the GPU's fault buffer per batch
  double fault_batch_s        = 14e-6;             // driver time per batch, beside the transfer
  double migration_efficiency = 7.4 / 12.2;        // on-demand migration rate / explicit copy rate

  bool enabled() const { return managed.any(); }
  // Batches the driver needs to fetch `faults` faults from the GPU's fault buffer.
  int64_t fault_batches(int64_t faults) const { return (faults + faults_per_batch - 1) / faults_per_batch; }
  bool is_managed(MemCategory c) const { return managed.test(static_cast<size_t>(c)); }
  // The GPU reads these where they are instead of faulting them in.
  bool is_remote(MemCategory c) const { return preferred_host || accessed_by.test(static_cast<size_t>(c)); }
};

} // namespace memwall

#pragma once
// Occupancy of one memory (a GPU's HBM, a socket's DRAM, a node's NVMe) over a replay.
// Peaks are never computed by formula: they are whatever the sequence of allocs and
// frees reaches. An alloc that does not fit is recorded as an OOM and still counted, so
// the user sees the whole demand.
#include "RunResult.hpp"

namespace memwall {

class MemoryPool {
public:
  // `timeline`: keep an event per alloc and free (PoolResult::timeline), not only peaks.
  MemoryPool(DeviceRef device, std::string hardware, double capacity, int count, bool timeline = true);

  void alloc(MemCategory c, double bytes, double now, const OpName& op);
  void free(MemCategory c, double bytes, double now);
  double free_bytes() const { return result_.capacity - total_; }
  double used_bytes() const { return total_; }
  PoolResult take_result() { return std::move(result_); }

private:
  void record(MemCategory c, double now);
  static constexpr size_t max_recorded_ooms = 32;

  PoolResult result_;
  CategoryBytes used_{};
  double total_ = 0;
  bool timeline_ = true;
};

} // namespace memwall

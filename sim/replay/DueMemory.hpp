#pragma once
// The allocs and frees inside coalesced runs (Coalescer.cpp), held until their pool is
// next touched: a run's members are timed when it starts, but its memory ops happen
// later, in time order with every other op on the same pool. Each pool merges its runs'
// lists in (time, run started) order (a heap of the lists' heads: as many as runs in
// flight on it, not as many as their ops). A pool's figures depend on the order of its
// own ops alone, so nothing is applied on a time advance: only when the pool is next
// touched (`apply`, before an alloc or free there) or the replay ends (`apply_all`).
#include "sim/replay/MemoryPool.hpp"
#include "workloads/dag/Op.hpp"

#include <cstdint>
#include <queue>
#include <unordered_map>
#include <vector>

namespace memwall {

class DueMemory {
public:
  struct Entry {
    double time      = 0;
    const Op* what   = nullptr; // an alloc or free (storage that never moves)
    MemoryPool* pool = nullptr;
  };
  // One run's entries, in time order; they may land in several pools.
  void add_run(std::vector<Entry>&& entries);
  // Applies the pool's entries due at or before `now`.
  void apply(MemoryPool& pool, double now);
  void apply_all(double now);
  // An alloc or free of `op` on `pool` at `now`.
  static void apply_op(MemoryPool& pool, const Op& op, double now);
  // The same after the runs' ops on the pool up to this instant, which come first.
  void apply_now(MemoryPool& pool, const Op& op, double now)
  {
    apply(pool, now);
    apply_op(pool, op, now);
  }

private:
  struct List {
    std::vector<Entry> entries;
    size_t next  = 0;
    uint64_t seq = 0; // order of the runs: at one instant, the earlier run's op first
  };
  struct Head {
    double time   = 0;
    uint64_t seq  = 0;
    uint32_t list = 0;
    bool operator>(const Head& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  void add_list(std::vector<Entry>&& entries, uint64_t seq);

  std::vector<List> lists_;
  std::vector<uint32_t> free_lists_;
  std::unordered_map<const MemoryPool*, std::priority_queue<Head, std::vector<Head>, std::greater<>>> heads_;
  uint64_t runs_ = 0;
};

} // namespace memwall

// DueMemory: coalesced runs' allocs and frees reach their pool in (time, run) order,
// and only when that pool is next touched. Hand-worked sequences of bytes.
#include "sim/replay/DueMemory.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

Op memory_op(OpKind kind, double bytes)
{
  Op op;
  op.kind     = kind;
  op.bytes    = bytes;
  op.category = MemCategory::activations;
  return op;
}

MemoryPool gpu_pool(int index) { return MemoryPool({DeviceKind::gpu, 0, index}, "test-gpu", 80e9, 1, true); }

} // namespace

TEST_CASE("a_pools_run_ops_reach_it_in_time_order_and_at_one_instant_the_earlier_run_first", "[replay][memory]")
{
  MemoryPool p = gpu_pool(0);
  Op a10 = memory_op(OpKind::alloc, 10), f10 = memory_op(OpKind::free, 10);
  Op a5 = memory_op(OpKind::alloc, 5), a7 = memory_op(OpKind::alloc, 7), f12 = memory_op(OpKind::free, 12);
  DueMemory due;
  // Run A (started first): +10 at 1 s, -10 at 3 s. Run B: +5 at 1 s, +7 at 2 s, -12 at 4 s.
  due.add_run({{1, &a10, &p}, {3, &f10, &p}});
  due.add_run({{1, &a5, &p}, {2, &a7, &p}, {4, &f12, &p}});
  due.apply(p, 2.5); // up to 2.5 s: A's +10, then B's +5 (same instant, A began first), B's +7
  CHECK(p.used_bytes() == 22);
  due.apply(p, 10);
  CHECK(p.used_bytes() == 0);
  PoolResult r = p.take_result();
  std::vector<double> times, totals;
  for (const MemoryEvent& e : r.timeline) {
    times.push_back(e.time);
    totals.push_back(e.total_bytes);
  }
  CHECK(times == std::vector<double>{1, 1, 2, 3, 4});
  CHECK(totals == std::vector<double>{10, 15, 22, 12, 0});
  CHECK(r.peak_bytes == 22);
}

TEST_CASE("a_runs_ops_on_another_pool_wait_until_that_pool_is_touched", "[replay][memory]")
{
  MemoryPool gpu = gpu_pool(0), other = gpu_pool(1);
  Op a4 = memory_op(OpKind::alloc, 4), a6 = memory_op(OpKind::alloc, 6), f4 = memory_op(OpKind::free, 4);
  DueMemory due;
  due.add_run({{1, &a4, &gpu}, {2, &a6, &other}, {3, &f4, &gpu}});
  due.apply(gpu, 5);
  CHECK(gpu.used_bytes() == 0);   // +4 then -4
  CHECK(other.used_bytes() == 0); // not touched yet
  due.apply_all(5);
  CHECK(other.used_bytes() == 6);
  due.apply_all(5); // nothing twice
  CHECK(other.used_bytes() == 6);
}

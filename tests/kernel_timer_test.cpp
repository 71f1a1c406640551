// The replay times each distinct kernel once (KernelTimer) and reuses the timing for
// every op alike: what it hands back must be what kernel_timing works out for that op,
// for ops that differ in any field the timing reads.
#include "hwmodels/Catalog.hpp"
#include "sim/timing/KernelTimer.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

Op kernel(KernelClass kclass, double flops, double bytes, GemmShape shape = {},
          KernelFamily family = KernelFamily::generic)
{
  Op op     = kernel_op(DeviceRef{}, kclass, Dtype::bf16, flops, bytes, flops, "k");
  op.shape  = shape;
  op.family = family;
  return op;
}

void same(const KernelTiming& a, const KernelTiming& b)
{
  CHECK(a.overhead_s == b.overhead_s);
  CHECK(a.compute_s == b.compute_s);
  CHECK(a.memory_bw == b.memory_bw);
}

} // namespace

TEST_CASE("a_kernel_timed_once_reads_the_same_as_timed_afresh_for_every_field_it_depends_on", "[timing]")
{
  const std::vector<Op> ops = {
      kernel(KernelClass::elementwise, 1e6, 4e3), // L2-resident: the small-size regime
      kernel(KernelClass::elementwise, 1e6, 4e9), // the same FLOPs, HBM-resident bytes
      kernel(KernelClass::gemm, 2.0 * 4096 * 4096 * 4096, 1e8, GemmShape{4096, 4096, 4096}),
      kernel(KernelClass::gemm, 2.0 * 4096 * 4096 * 4096, 1e8, GemmShape{64, 4096, 262144}), // same FLOPs, skinny
      kernel(KernelClass::attention, 1e12, 1e8),
      // ops[1] again but a norm: the profiles time norms by their own curve.
      kernel(KernelClass::elementwise, 1e6, 4e9, {}, KernelFamily::norm),
  };
  // Fitted profiles (hwmodels/catalog/profiles): the A40's elementwise curve has two
  // size regimes (below and above 6.9 MB), the A100's GEMM model times by shape, and
  // both time norm kernels apart from the rest.
  for (const char* id : {"a40", "a100-sxm4-80gb"}) {
    INFO(id);
    GpuSpec gpu = gpu_preset(id);
    REQUIRE(gpu.profile);
    KernelTimer timer(gpu);
    for (int pass = 0; pass < 2; ++pass) // the second pass reads what the first stored
      for (const Op& op : ops)
        same(timer(op), kernel_timing(gpu, op));
  }
  // The cases differ where the timing does.
  KernelTimer a40(gpu_preset("a40")), a100(gpu_preset("a100-sxm4-80gb"));
  CHECK(a40(ops[0]).memory_bw != a40(ops[1]).memory_bw);
  CHECK(a100(ops[2]).compute_s != a100(ops[3]).compute_s);
  CHECK(a100(ops[1]).memory_bw != a100(ops[5]).memory_bw);
}

TEST_CASE("a_timer_fed_more_distinct_kernels_than_it_keeps_still_times_each_as_afresh", "[timing]")
{
  // A serving run's kernels change shape with every batch; the timer forgets what it
  // stored past 65,536 kernels. 200,000 distinct elementwise kernels (byte counts
  // 1 kB apart), then the first ones again: each timing as kernel_timing works it out.
  GpuSpec gpu = gpu_preset("a40");
  KernelTimer timer(gpu);
  size_t wrong = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < (pass == 0 ? 200000 : 1000); ++i) {
      Op op          = kernel(KernelClass::elementwise, 1e6, 4e3 + 1e3 * i);
      KernelTiming a = timer(op), b = kernel_timing(gpu, op);
      wrong += a.overhead_s != b.overhead_s || a.compute_s != b.compute_s || a.memory_bw != b.memory_bw;
    }
  CHECK(wrong == 0);
}

TEST_CASE("a_norm_kernel_takes_the_profiles_norm_curve_and_a_kernel_of_no_family_the_curve_over_all", "[timing]")
{
  // The shipped A100 profile holds Vidur's RMSNorm kernels apart (calibration/data). A
  // 200 MB norm (8192 tokens x 6144 x fp16, read and written) lies in the norm curve's
  // last regime; the same bytes in a dropout (no family) in the curve over all kernels.
  GpuSpec a100 = gpu_preset("a100-sxm4-80gb");
  REQUIRE(a100.profile);
  const double B     = 2.0 * 8192 * 6144 * 2;
  const Regime& norm = a100.profile->elementwise_families.at(KernelFamily::norm).regime(B);
  const Regime& all  = a100.profile->elementwise.regime(B);
  KernelTiming n     = kernel_timing(a100, kernel(KernelClass::elementwise, 0, B, {}, KernelFamily::norm));
  KernelTiming d     = kernel_timing(a100, kernel(KernelClass::elementwise, 0, B));
  CHECK(n.total_s(B) == Approx(norm.latency_s + B / norm.bandwidth).epsilon(1e-12));
  CHECK(d.total_s(B) == Approx(all.latency_s + B / all.bandwidth).epsilon(1e-12));
  // Vidur's RMSNorm streams at about 0.69 TB/s, all its memory-bound kernels together
  // at about 1.28: the norm takes longer.
  CHECK(n.total_s(B) > 1.5 * d.total_s(B));
}

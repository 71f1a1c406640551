#include "KernelTiming.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {
namespace {

// Achievable FLOP/s without a profile: tensor-core peak times the class's efficiency;
// elementwise kernels run on the vector units and are bound by bytes anyway.
double estimated_rate(const GpuSpec& g, const Op& op)
{
  switch (op.kclass) {
    case KernelClass::gemm: return g.peak(op.dtype) * g.matmul_efficiency;
    case KernelClass::attention: return g.peak(op.dtype) * g.attention_efficiency;
    case KernelClass::elementwise:
    case KernelClass::other: return g.peak(Dtype::fp32) * 0.5;
  }
  return g.peak(Dtype::fp32);
}

} // namespace

KernelTiming recorded_kernel_timing(const GpuSpec& from, const GpuSpec& to, const Op& op)
{
  KernelTiming t;
  if (from.id == to.id) {
    t.compute_s = op.seconds;
    return t;
  }
  // The first kernel_overhead_s of a kernel is launch and tail, which scale with the
  // GPUs' overheads; a kernel shorter than that is all overhead.
  double fixed  = std::min(op.seconds, from.kernel_overhead_s);
  double body   = op.seconds - fixed;
  bool compute  = op.kclass == KernelClass::gemm || op.kclass == KernelClass::attention;
  double efficiency_from = op.kclass == KernelClass::attention ? from.attention_efficiency : from.matmul_efficiency;
  double efficiency_to   = op.kclass == KernelClass::attention ? to.attention_efficiency : to.matmul_efficiency;
  double rate_from = compute ? from.peak(op.dtype) * efficiency_from : from.hbm_achievable_bw;
  double rate_to   = compute ? to.peak(op.dtype) * efficiency_to : to.hbm_achievable_bw;
  if (compute && rate_to <= 0) // a format the target lacks (fp8 on an A100): what a job would fall back to
    rate_to = (to.supports(Dtype::fp16) ? to.peak(Dtype::fp16) : to.peak(Dtype::fp32)) * efficiency_to;
  t.overhead_s = from.kernel_overhead_s > 0 ? fixed * to.kernel_overhead_s / from.kernel_overhead_s : fixed;
  t.compute_s  = rate_from > 0 && rate_to > 0 ? body * rate_from / rate_to : body;
  return t;
}

double KernelTiming::total_s(double bytes) const { return overhead_s + std::max(compute_s, memory_s(bytes)); }

KernelTiming kernel_timing(const GpuSpec& g, const Op& op)
{
  KernelTiming t;
  if (op.seconds > 0) { // measured where it was recorded: all of it compute, nothing to share
    t.compute_s = op.seconds;
    return t;
  }
  t.overhead_s     = g.kernel_overhead_s;
  t.memory_bw      = g.hbm_achievable_bw;
  double rate      = estimated_rate(g, op);
  t.compute_s      = rate > 0 ? op.flops / rate : 0.0;
  const GpuProfile* p = g.profile.get();
  if (!p)
    return t;
  if (!p->elementwise.empty()) {
    // A kernel launch costs what the smallest memory-bound kernel does.
    t.overhead_s = p->elementwise.regimes.front().latency_s;
    if (op.kclass == KernelClass::elementwise) {
      t.overhead_s = p->elementwise.latency(op.bytes);
      t.memory_bw  = p->elementwise.bandwidth(op.bytes);
    }
  }
  if (op.kclass == KernelClass::gemm && op.shape.known()) {
    if (const GemmModel* m = p->gemm_model(op.dtype, g.peak(op.dtype))) {
      double one = 2.0 * op.shape.m * op.shape.n * op.shape.k;
      // The op may stand for several GEMMs of this shape (backward: input and weight
      // gradients); each is a launch.
      double launches = std::max(1.0, std::round(op.flops / one));
      double body     = m->time(op.shape.m, op.shape.n, op.shape.k) - m->launch_s;
      t.overhead_s    = launches * m->launch_s;
      t.compute_s     = body > 0 ? op.flops / (one / body) : 0.0;
    }
  }
  return t;
}

} // namespace memwall

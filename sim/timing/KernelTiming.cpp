#include "sim/timing/KernelTiming.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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

// A GPU's launch-and-tail time and the bandwidth a memory-bound kernel of `bytes`
// streams at: its fitted profile's elementwise curve where it has one (measured), else
// the catalog's kernel_overhead_s and hbm_achievable_bw.
static double launch_s(const GpuSpec& g)
{
  const GpuProfile* p = g.profile.get();
  return p && !p->elementwise.empty() ? std::max(0.0, p->elementwise.regimes.front().latency_s - p->event_overhead_s)
                                      : g.kernel_overhead_s;
}

static double streaming_bw(const GpuSpec& g, double bytes)
{
  const GpuProfile* p = g.profile.get();
  return p && !p->elementwise.empty() ? p->elementwise.bandwidth(bytes) : g.hbm_achievable_bw;
}

KernelTiming recorded_kernel_timing(const GpuSpec& from, const GpuSpec& to, const Op& op)
{
  KernelTiming t;
  if (from.id == to.id) {
    t.compute_s = op.seconds;
    return t;
  }
  // The first launch_s of a kernel is launch and tail; a kernel shorter than that is
  // all of it.
  double launch_from = launch_s(from), launch_to = launch_s(to);
  double fixed = std::min(op.seconds, launch_from);
  double body  = op.seconds - fixed;
  t.overhead_s = launch_from > 0 ? fixed * launch_to / launch_from : fixed;
  if (op.kclass == KernelClass::gemm || op.kclass == KernelClass::attention) {
    bool attention   = op.kclass == KernelClass::attention;
    double eff_to    = attention ? to.attention_efficiency : to.matmul_efficiency;
    double rate_from = from.peak(op.dtype) * (attention ? from.attention_efficiency : from.matmul_efficiency);
    // A format the target lacks (fp8 on an A100) runs at what a job would fall back to.
    Dtype on_to    = to.supports(op.dtype) ? op.dtype : to.supports(Dtype::fp16) ? Dtype::fp16 : Dtype::fp32;
    double rate_to = to.peak(on_to) * eff_to;
    t.compute_s    = rate_from > 0 && rate_to > 0 ? body * rate_from / rate_to : body;
    return t;
  }
  // Memory-bound: the bytes it moved at the source's rate, at the target's.
  double bytes = body * streaming_bw(from, body * from.hbm_achievable_bw);
  double bw_to = streaming_bw(to, bytes);
  t.compute_s  = bw_to > 0 ? bytes / bw_to : body;
  return t;
}

double KernelTiming::total_s(double bytes) const { return overhead_s + std::max(compute_s, memory_s(bytes)); }

// The share of a fitted GEMM's time its tiles' compute takes (the rest it waits on its
// operands in HBM): its model's compute time over its model's time, launch aside.
static double clocked_share(const GemmModel& model, double m, double n, double k, double groups)
{
  double whole = model.time(m, n, k, groups) - model.launch_s;
  return whole > 0 ? std::min(1.0, model.compute_time(m, n, k, groups) / whole) : 1.0;
}

// A GEMM op on a profile that measured its dtype pass by pass: each GEMM the op runs
// (forward; or the input and the weight gradient, each in its own layout, of the
// forward's shape) timed by its pass's model and table. The op's FLOPs beyond those
// GEMMs (LoRA adapters) run at the same rate.
// Returns the GEMMs timed.
static size_t time_by_pass(const GpuProfile& p, double peak, const Op& op, KernelTiming& t)
{
  std::vector<GemmPass> runs{op.pass};
  if (op.pass == GemmPass::backward)
    runs = {GemmPass::input_grad, GemmPass::weight_grad};
  double tokens = op.shape.m, out = op.shape.n, in = op.shape.k, groups = op.shape.groups();
  double launch = 0, body = 0, clocked = 0;
  for (GemmPass pass : runs) {
    double m, n, k;
    pass_dims(pass, tokens, out, in, m, n, k);
    const GemmModel* model = p.gemm_model(op.dtype, peak, pass);
    launch += model->launch_s;
    double own = p.gemm_time(op.dtype, peak, pass, m, n, k, groups) - model->launch_s;
    body += own;
    clocked += std::max(0.0, own) * clocked_share(*model, m, n, k, groups);
  }
  double flops = 2.0 * tokens * out * in * groups * static_cast<double>(runs.size());
  t.overhead_s = launch;
  t.compute_s  = body > 0 ? body * op.flops / flops : 0.0;
  t.clocked_s  = body > 0 ? clocked * op.flops / flops : 0.0;
  return runs.size();
}

// Decode attention's reads of the KV cache stream at what decode kernels achieve by the
// bytes one launch reads (FlashInfer's H100 batch decode: 41 % of peak at 34 MB, 63 % at
// 134 MB, 88 % at 1 GB; fp8 caches slower per byte), not at the HBM's sustained rate. The
// measured kernel time is latency + bytes / rate of the size's regime; the op's own launch
// overhead is part of it, so the rest is folded into the rate the bytes stream at.
static void time_kv_reads(const GpuSpec& g, const Op& op, KernelTiming& t)
{
  const bool fp8 = op.family == KernelFamily::kv_read_fp8;
  if (op.kclass != KernelClass::attention || op.bytes <= 0 || !(fp8 || op.family == KernelFamily::kv_read))
    return;
  const bool small = op.bytes <= g.kv_read_small_bytes;
  double rate = g.hbm_peak_bw * (small ? g.kv_read_small_share : g.kv_read_share) * (fp8 ? g.kv_read_fp8_factor : 1);
  if (rate <= 0)
    return;
  const double kernel_s = (small ? g.kv_read_small_latency_s : g.kv_read_latency_s) + op.bytes / rate;
  const double body     = kernel_s - t.overhead_s;
  t.memory_bw           = body > 0 ? std::min(g.hbm_achievable_bw, op.bytes / body) : g.hbm_achievable_bw;
  t.kernel_paced        = t.memory_bw < g.hbm_achievable_bw;
}

KernelTiming kernel_timing(const GpuSpec& g, const Op& op)
{
  KernelTiming t;
  if (op.seconds > 0) { // measured where it was recorded: all of it compute, nothing to share
    t.compute_s = op.seconds;
    return t;
  }
  t.overhead_s        = g.kernel_overhead_s;
  t.memory_bw         = g.hbm_achievable_bw;
  double rate         = estimated_rate(g, op);
  t.compute_s         = rate > 0 ? op.flops / rate : 0.0;
  const GpuProfile* p = g.profile.get();
  if (!p) {
    time_kv_reads(g, op, t);
    return t;
  }
  double launches = 1; // kernels the op stands for
  if (!p->elementwise.empty()) {
    // A kernel launch costs what the smallest memory-bound kernel does.
    t.overhead_s = p->elementwise.regimes.front().latency_s;
    if (op.kclass == KernelClass::elementwise) {
      // Its family's curve where the profile measured the family, else all kernels'.
      const LatencyBandwidthCurve& c = p->elementwise_curve(op.family);
      t.overhead_s                   = c.latency(op.bytes);
      t.memory_bw                    = c.bandwidth(op.bytes);
    }
  }
  if (op.kclass == KernelClass::gemm && op.shape.known()) {
    double peak = g.peak(op.dtype);
    if (p->has_pass_data(op.dtype, peak))
      launches = static_cast<double>(time_by_pass(*p, peak, op, t));
    else if (const GemmModel* m = p->gemm_model(op.dtype, peak)) {
      // One launch: a GEMM, or a grouped GEMM of `groups` of this shape.
      double groups = op.shape.groups();
      double one    = 2.0 * op.shape.m * op.shape.n * op.shape.k * groups;
      // The op may stand for several launches of this shape (backward: input and
      // weight gradients).
      launches     = std::max(1.0, std::round(op.flops / one));
      double body  = m->time(op.shape.m, op.shape.n, op.shape.k, groups) - m->launch_s;
      t.overhead_s = launches * m->launch_s;
      t.compute_s  = body > 0 ? op.flops / (one / body) : 0.0;
      t.clocked_s  = t.compute_s * clocked_share(*m, op.shape.m, op.shape.n, op.shape.k, groups);
    }
  }
  // Measured one kernel at a time between events: each launch held the stream that much
  // less in a busy stream than it measured.
  t.overhead_s = std::max(0.0, t.overhead_s - launches * p->event_overhead_s);
  if (op.host_paced) // the stream's idle time between launches is the host's, not the kernel's
    t.overhead_s = std::max(0.0, t.overhead_s - launches * p->launch_gap_s);
  time_kv_reads(g, op, t);
  return t;
}

} // namespace memwall

#include "calibration/fit/ProfileFit.hpp"

#include "base/InputError.hpp"
#include "calibration/fit/NelderMead.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace memwall {
namespace {

double logistic(double x) { return 1 / (1 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1 - p)); }

double quantile(std::vector<double> v, double q)
{
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo  = static_cast<size_t>(std::floor(pos));
  size_t hi  = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

// A point in the optimiser's unbounded space mapped into the parameters' physical ranges
// (GemmModel's bounds; the operand bandwidth up to `max_bandwidth`).
GemmModel gemm_from(const std::vector<double>& x, const GemmModel& base, double max_bandwidth)
{
  auto between = [](double lo, double hi, double v) { return lo + (hi - lo) * logistic(v); };
  GemmModel g  = base;
  g.launch_s   = std::exp(between(std::log(GemmModel::min_launch_s), std::log(GemmModel::max_launch_s), x[0]));
  g.efficiency = logistic(x[1]);
  g.bandwidth  = max_bandwidth * logistic(x[2]);
  g.small_tile_efficiency = between(GemmModel::min_small_tile_efficiency, 1, x[3]);
  g.blend                 = between(1, GemmModel::max_blend, x[4]);
  g.k_overhead            = GemmModel::max_k_overhead * logistic(x[5]);
  return g;
}

// The inverse of `between`'s logistic for a starting value v in (lo, hi).
double unit_logit(double lo, double hi, double v) { return logit((v - lo) / (hi - lo)); }

struct Segment {
  Regime regime;
  double error = 0; // sum of squared relative errors
};

// Weighted least squares of t = a + x / bw with weights 1/t^2 (relative error), inside
// physical bounds: latency a >= 0, bandwidth <= max_bw (a flat segment, where time does
// not grow with size, runs at max_bw).
Segment fit_line(const std::vector<std::pair<double, double>>& pts, size_t lo, size_t hi, double max_bw)
{
  double sw = 0, sx = 0, st = 0, sxx = 0, sxt = 0;
  for (size_t i = lo; i < hi; ++i) {
    auto [x, t] = pts[i];
    double w    = 1 / (t * t);
    sw += w, sx += w * x, st += w * t, sxx += w * x * x, sxt += w * x * t;
  }
  double det = sw * sxx - sx * sx;
  double a = 0, b = 0;
  if (det > 0) {
    b = (sw * sxt - sx * st) / det;
    a = (st - b * sx) / sw;
  }
  double b_min = 1 / max_bw;
  if (a < 0 || det <= 0) { // no latency, the slope fitted to what is left
    a = 0;
    b = sxx > 0 ? (sxt - a * sx) / sxx : 0;
  }
  if (b < b_min) { // faster than the part can move bytes: at its peak, the latency refitted
    b = b_min;
    a = std::max(0.0, (st - b * sx) / sw);
  }
  Segment s;
  s.regime = {pts[hi - 1].first, a, 1 / b};
  for (size_t i = lo; i < hi; ++i) {
    double e = (a + pts[i].first * b) / pts[i].second - 1;
    s.error += e * e;
  }
  return s;
}

// Whether the regimes' times never fall as sizes grow past a regime's end (1 % slack):
// a larger copy or kernel is never faster than a smaller one.
bool monotone(const LatencyBandwidthCurve& c)
{
  for (size_t i = 0; i + 1 < c.regimes.size(); ++i) {
    const Regime &a = c.regimes[i], &b = c.regimes[i + 1];
    double x = a.upto_bytes;
    if (b.latency_s + x / b.bandwidth < 0.99 * (a.latency_s + x / a.bandwidth))
      return false;
  }
  return true;
}

} // namespace

GemmModel fit_gemm(const std::vector<Measurement>& points, const GpuSpec& gpu, Dtype dtype)
{
  GemmModel base;
  base.peak_flops    = gpu.peak(dtype);
  base.sms           = gpu.sms;
  base.element_bytes = dtype_bytes(dtype);
  if (base.peak_flops <= 0)
    throw InputError("calibrate fit: " + gpu.id + " has no " + dtype_name(dtype) + " peak in the catalog");
  if (gpu.sms <= 0)
    throw InputError("calibrate fit: catalog GPU " + gpu.id + " has no sms (streaming multiprocessors)");
  // Operands stream from HBM: never faster than its datasheet peak.
  double max_bw  = gpu.hbm_peak_bw > 0 ? gpu.hbm_peak_bw : 1e16;
  auto objective = [&](const std::vector<double>& x) {
    GemmModel g = gemm_from(x, base, max_bw);
    double sum  = 0;
    for (const Measurement& m : points) {
      double e = std::log(g.time(m.m, m.n, m.k) / m.time_s);
      sum += e * e;
    }
    return sum / points.size();
  };
  double start_bw = std::min(gpu.hbm_achievable_bw > 0 ? gpu.hbm_achievable_bw : 0.75 * max_bw, 0.9 * max_bw);
  std::vector<double> start{
      unit_logit(std::log(GemmModel::min_launch_s), std::log(GemmModel::max_launch_s), std::log(5e-6)),
      logit(0.75),
      logit(start_bw / max_bw),
      unit_logit(GemmModel::min_small_tile_efficiency, 1, 0.8),
      unit_logit(1, GemmModel::max_blend, 2),
      logit(64 / GemmModel::max_k_overhead)};
  return gemm_from(nelder_mead(objective, start, 0.5, 3000), base, max_bw);
}

LatencyBandwidthCurve fit_curve(const std::vector<Measurement>& points, int max_regimes, double max_bandwidth,
                                bool monotonic)
{
  // One point per size: the median time of the rows of that size.
  std::map<double, std::vector<double>> by_size;
  for (const Measurement& m : points)
    by_size[m.bytes].push_back(m.time_s);
  std::vector<std::pair<double, double>> pts;
  for (auto& [x, ts] : by_size)
    pts.emplace_back(x, quantile(ts, 0.5));
  size_t n = pts.size();
  // A later regime's latency may fit to 0 where the time per byte grows with size
  // (pageable copies beyond 16 MiB: 13.6 then 11.2 GB/s on an H100); the monotone check
  // below keeps such a curve from dropping at the boundary.
  auto line               = [&](size_t i, size_t j) { return fit_line(pts, i, j, max_bandwidth); };
  const size_t min_points = 3;
  // best[r][j]: the best fit of the first j points with r regimes.
  std::vector<std::vector<double>> best(max_regimes + 1, std::vector<double>(n + 1, INFINITY));
  std::vector<std::vector<size_t>> cut(max_regimes + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (int r = 1; r <= max_regimes; ++r)
    for (size_t j = 1; j <= n; ++j)
      for (size_t i = 0; i < j; ++i) {
        if (best[r - 1][i] == INFINITY || (j - i < min_points && !(r == 1 && j == n && n < min_points)))
          continue;
        double e = best[r - 1][i] + line(i, j).error;
        if (e < best[r][j]) {
          best[r][j] = e;
          cut[r][j]  = i;
        }
      }
  auto curve_of = [&](int regimes) {
    LatencyBandwidthCurve c;
    for (size_t j = n, r = static_cast<size_t>(regimes); r > 0; --r) {
      size_t i = cut[r][j];
      c.regimes.insert(c.regimes.begin(), line(i, j).regime);
      j = i;
    }
    c.regimes.back().upto_bytes = INFINITY;
    return c;
  };
  // Another regime must cut the error by a fifth, is not worth it for a curve that
  // already fits within 0.1 % RMS, and (`monotonic`) must keep time growing with size.
  int regimes = 1;
  for (int r = 2; r <= max_regimes; ++r)
    if (best[r][n] < 0.8 * best[regimes][n] && std::sqrt(best[regimes][n] / n) > 1e-3 &&
        (!monotonic || monotone(curve_of(r))))
      regimes = r;
  return curve_of(regimes);
}

namespace {

// PCIe's payload rate per direction: 8, 16, 32 GT/s a lane for generations 3, 4, 5
// (doubling from there), 128b/130b encoding.
double pcie_bytes_per_s(const GpuSpec& g)
{
  double gt = g.pcie_gen >= 3 ? 8e9 * std::pow(2.0, g.pcie_gen - 3) : 5e9;
  return gt * g.pcie_lanes / 8 * 128 / 130;
}

// The fastest a copy curve of `kind` can move bytes on `g`: its link's line rate.
double copy_cap(const GpuSpec& g, const std::string& kind)
{
  double pcie = pcie_bytes_per_s(g);
  if (kind == "peer")
    return g.nvlink_bw > 0 ? g.nvlink_bw : pcie;
  if (kind == "bidir_pinned")
    return 2 * pcie;
  return pcie;
}

// The measured sweeps of one dtype and pass: rows grouped by the two fixed dimensions,
// each token count's median time.
GemmTable table_of(GemmPass pass, const std::vector<Measurement>& rows)
{
  std::map<std::pair<double, double>, std::map<double, std::vector<double>>> by_shape;
  for (const Measurement& m : rows) {
    GemmSweepPoint q = sweep_point(pass, m.m, m.n, m.k);
    by_shape[{q.a, q.b}][q.tokens].push_back(m.time_s);
  }
  GemmTable t;
  t.pass = pass;
  for (auto& [shape, times] : by_shape) {
    if (times.size() < 2)
      continue;
    GemmSweep s;
    std::tie(s.a, s.b) = shape;
    for (auto& [tokens, ts] : times) {
      s.tokens.push_back(tokens);
      s.time_s.push_back(quantile(ts, 0.5));
    }
    t.sweeps.push_back(std::move(s));
  }
  return t;
}

} // namespace

GpuProfile fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, const std::string& source)
{
  GpuProfile p;
  p.gpu    = gpu.id;
  p.source = source;
  std::map<Dtype, std::vector<Measurement>> gemms;
  std::map<std::pair<Dtype, GemmPass>, std::vector<Measurement>> passes;
  std::vector<Measurement> elementwise; // every memory-bound kernel, whatever its family
  std::map<KernelFamily, std::vector<Measurement>> families;
  std::map<std::string, std::vector<Measurement>> copies;
  std::map<std::tuple<std::string, int, int>, std::vector<Measurement>> collectives;
  for (const Measurement& m : rows) {
    if (m.gpu != gpu.id)
      throw InputError(m.source + ": measurement of GPU '" + m.gpu + "' given to a fit for '" + gpu.id +
                       "'; fit one GPU at a time");
    if (m.benchmark == "gemm") {
      auto d = dtype_from_name(m.dtype);
      if (!d)
        throw InputError(m.source + ": unknown GEMM dtype '" + m.dtype + "'");
      gemms[*d].push_back(m);
      if (auto pass = measured_gemm_pass(m.pass))
        passes[{*d, *pass}].push_back(m);
    } else if (auto f = elementwise_family(m.benchmark)) {
      // The optimizer's launches run well below the streaming rate (PyTorch's fused
      // AdamW: 320 blocks a launch): they time their own family, not the others'.
      if (*f != KernelFamily::optimizer)
        elementwise.push_back(m);
      if (*f != KernelFamily::generic)
        families[*f].push_back(m);
    } else if (is_collective(m.benchmark)) {
      collectives[{m.benchmark, m.ranks, m.ranks_per_node}].push_back(m);
    } else if (is_sustained_gemm(m.benchmark)) {
      continue; // recorded for the power limit's rate, which no model takes yet
    } else {
      copies[m.benchmark].push_back(m);
    }
  }
  // Rows that name their pass are the richer measurement of a dtype (each layout apart):
  // where a dtype has them, its models come from them alone.
  for (auto& [d, pts] : gemms) {
    std::vector<Measurement> with_pass;
    for (const Measurement& m : pts)
      if (!m.pass.empty())
        with_pass.push_back(m);
    if (!with_pass.empty())
      pts = std::move(with_pass);
    p.gemm[d] = fit_gemm(pts, gpu, d);
  }
  // A pass measured apart gets its own model (enough rows for six parameters) and its table.
  for (const auto& [key, pts] : passes) {
    if (pts.size() >= 12)
      p.gemm_passes[key] = fit_gemm(pts, gpu, key.first);
    GemmTable t = table_of(key.second, pts);
    if (!t.empty())
      p.gemm_tables[key] = std::move(t);
  }
  double hbm = gpu.hbm_peak_bw > 0 ? gpu.hbm_peak_bw : 1e18;
  if (!elementwise.empty())
    p.elementwise = fit_curve(elementwise, 3, hbm, true);
  for (const auto& [f, pts] : families)
    if (pts.size() >= 2)
      p.elementwise_families[f] = fit_curve(pts, 3, hbm, true);
  for (const auto& [k, pts] : copies)
    p.copies[k] = fit_curve(pts, 3, copy_cap(gpu, k), true);
  for (const auto& [key, pts] : collectives) {
    if (pts.size() < 2)
      continue;
    CollectiveCurve c;
    std::tie(c.kind, c.ranks, c.ranks_per_node) = key;
    c.curve                                     = fit_curve(pts);
    p.collectives.push_back(c);
  }
  if (p.gemm.empty() && p.elementwise.empty() && p.copies.empty() && p.collectives.empty())
    throw InputError("calibrate fit: no measurements of " + gpu.id + " that a model can be fitted to");
  return p;
}

double predict(const GpuProfile& p, const Measurement& m, const GpuSpec* gpu)
{
  if (m.benchmark == "gemm") {
    auto d = dtype_from_name(m.dtype);
    if (!d)
      return -1;
    // The datasheet peak lets a dtype the profile did not measure borrow a measured one's model.
    double peak = gpu ? gpu->peak(*d) : 0.0;
    if (peak <= 0)
      if (auto it = p.gemm.find(*d); it != p.gemm.end())
        peak = it->second.peak_flops;
    if (auto pass = measured_gemm_pass(m.pass))
      return p.gemm_time(*d, peak, *pass, m.m, m.n, m.k);
    const GemmModel* g = p.gemm_model(*d, peak);
    return g ? g->time(m.m, m.n, m.k) : -1;
  }
  if (auto f = elementwise_family(m.benchmark)) {
    const LatencyBandwidthCurve& c = p.elementwise_curve(*f);
    return c.empty() ? -1 : c.time(m.bytes);
  }
  if (is_collective(m.benchmark)) {
    const CollectiveCurve* c = p.collective(m.benchmark, m.ranks, m.ranks_per_node);
    return c ? c->curve.time(m.bytes) : -1;
  }
  if (is_sustained_gemm(m.benchmark))
    return -1;
  auto it = p.copies.find(m.benchmark);
  return it == p.copies.end() ? -1 : it->second.time(m.bytes);
}

static std::string check_key(const Measurement& m)
{
  std::string key = m.benchmark;
  if (m.benchmark == "gemm")
    key += ":" + m.dtype + (m.pass.empty() ? "" : ":" + m.pass);
  if (is_collective(m.benchmark))
    key += " " + std::to_string(m.ranks) + "x" + std::to_string(m.ranks_per_node);
  return key;
}

std::vector<CheckLine> check_profile(const GpuProfile& p, const std::vector<Measurement>& rows, size_t& skipped,
                                     const GpuSpec* gpu, std::vector<double>* predictions)
{
  std::map<std::string, std::vector<double>> errors;
  skipped = 0;
  if (predictions)
    predictions->clear();
  for (const Measurement& m : rows) {
    if (m.gpu != p.gpu)
      throw InputError(m.source + ": measurement of GPU '" + m.gpu + "' checked against a profile of '" + p.gpu + "'");
    double t = predict(p, m, gpu);
    if (predictions)
      predictions->push_back(t);
    if (t < 0) {
      ++skipped;
      continue;
    }
    errors[check_key(m)].push_back(t / m.time_s - 1);
  }
  std::vector<CheckLine> out;
  for (const auto& [key, e] : errors) {
    std::vector<double> abs(e.size());
    std::transform(e.begin(), e.end(), abs.begin(), [](double v) { return std::fabs(v); });
    CheckLine l;
    l.benchmark     = key;
    l.points        = e.size();
    l.median_error  = quantile(abs, 0.5);
    l.p90_error     = quantile(abs, 0.9);
    l.max_error     = *std::max_element(abs.begin(), abs.end());
    l.median_signed = quantile(e, 0.5);
    out.push_back(l);
  }
  return out;
}

} // namespace memwall

#include "ProfileFit.hpp"

#include "InputError.hpp"
#include "NelderMead.hpp"

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

GemmModel gemm_from(const std::vector<double>& x, const GemmModel& base)
{
  GemmModel g  = base;
  g.launch_s   = std::exp(x[0]);
  g.efficiency = logistic(x[1]);
  g.bandwidth  = std::exp(x[2]);
  g.small_tile_efficiency = logistic(x[3]);
  g.blend      = 1 + std::exp(x[4]);
  g.k_overhead = std::exp(x[5]);
  return g;
}

struct Segment {
  Regime regime;
  double error = 0; // sum of squared relative errors
};

// Weighted least squares of t = a + x / bw with weights 1/t^2 (relative error), a >= 0.
Segment fit_line(const std::vector<std::pair<double, double>>& pts, size_t lo, size_t hi)
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
  if (a < 0 || det <= 0) {
    a = 0;
    b = sxx > 0 ? sxt / sxx : 0;
  }
  if (b <= 0) { // flat: latency only; a tiny slope keeps the bandwidth finite
    b = 1e-18;
    a = st / sw;
  }
  Segment s;
  s.regime = {pts[hi - 1].first, a, 1 / b};
  for (size_t i = lo; i < hi; ++i) {
    double e = (a + pts[i].first * b) / pts[i].second - 1;
    s.error += e * e;
  }
  return s;
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
  auto objective = [&](const std::vector<double>& x) {
    GemmModel g = gemm_from(x, base);
    double sum  = 0;
    for (const Measurement& m : points) {
      double e = std::log(g.time(m.m, m.n, m.k) / m.time_s);
      sum += e * e;
    }
    return sum / points.size();
  };
  std::vector<double> start{std::log(5e-6), logit(0.75), std::log(gpu.hbm_achievable_bw), logit(0.8), 0.0,
                            std::log(64.0)};
  return gemm_from(nelder_mead(objective, start, 0.5, 3000), base);
}

LatencyBandwidthCurve fit_curve(const std::vector<Measurement>& points, int max_regimes)
{
  // One point per size: the median time of the rows of that size.
  std::map<double, std::vector<double>> by_size;
  for (const Measurement& m : points)
    by_size[m.bytes].push_back(m.time_s);
  std::vector<std::pair<double, double>> pts;
  for (auto& [x, ts] : by_size)
    pts.emplace_back(x, quantile(ts, 0.5));
  size_t n = pts.size();
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
        double e = best[r - 1][i] + fit_line(pts, i, j).error;
        if (e < best[r][j]) {
          best[r][j] = e;
          cut[r][j]  = i;
        }
      }
  // Another regime must cut the error by a fifth, and is not worth it for a curve that
  // already fits within 0.1 % RMS.
  int regimes = 1;
  for (int r = 2; r <= max_regimes; ++r)
    if (best[r][n] < 0.8 * best[regimes][n] && std::sqrt(best[regimes][n] / n) > 1e-3)
      regimes = r;
  LatencyBandwidthCurve c;
  for (size_t j = n, r = regimes; r > 0; --r) {
    size_t i = cut[r][j];
    c.regimes.insert(c.regimes.begin(), fit_line(pts, i, j).regime);
    j = i;
  }
  c.regimes.back().upto_bytes = INFINITY;
  return c;
}

GpuProfile fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, const std::string& source)
{
  GpuProfile p;
  p.gpu    = gpu.id;
  p.source = source;
  std::map<Dtype, std::vector<Measurement>> gemms;
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
    } else if (auto f = elementwise_family(m.benchmark)) {
      elementwise.push_back(m);
      if (*f != KernelFamily::generic)
        families[*f].push_back(m);
    } else if (is_collective(m.benchmark)) {
      collectives[{m.benchmark, m.ranks, m.ranks_per_node}].push_back(m);
    } else if (m.benchmark != "managed_fault" && m.benchmark != "bidir_pinned") {
      copies[m.benchmark].push_back(m);
    }
  }
  for (const auto& [d, pts] : gemms)
    p.gemm[d] = fit_gemm(pts, gpu, d);
  if (!elementwise.empty())
    p.elementwise = fit_curve(elementwise);
  for (const auto& [f, pts] : families)
    if (pts.size() >= 2)
      p.elementwise_families[f] = fit_curve(pts);
  for (const auto& [k, pts] : copies)
    p.copies[k] = fit_curve(pts);
  for (const auto& [key, pts] : collectives) {
    if (pts.size() < 2)
      continue;
    CollectiveCurve c;
    std::tie(c.kind, c.ranks, c.ranks_per_node) = key;
    c.curve = fit_curve(pts);
    p.collectives.push_back(c);
  }
  if (p.gemm.empty() && p.elementwise.empty() && p.copies.empty() && p.collectives.empty())
    throw InputError("calibrate fit: no measurements of " + gpu.id + " that a model can be fitted to");
  return p;
}

double predict(const GpuProfile& p, const Measurement& m)
{
  if (m.benchmark == "gemm") {
    auto d = dtype_from_name(m.dtype);
    auto it = d ? p.gemm.find(*d) : p.gemm.end();
    return it == p.gemm.end() ? -1 : it->second.time(m.m, m.n, m.k);
  }
  if (auto f = elementwise_family(m.benchmark)) {
    const LatencyBandwidthCurve& c = p.elementwise_curve(*f);
    return c.empty() ? -1 : c.time(m.bytes);
  }
  if (is_collective(m.benchmark)) {
    const CollectiveCurve* c = p.collective(m.benchmark, m.ranks, m.ranks_per_node);
    return c ? c->curve.time(m.bytes) : -1;
  }
  auto it = p.copies.find(m.benchmark);
  return it == p.copies.end() ? -1 : it->second.time(m.bytes);
}

std::vector<CheckLine> check_profile(const GpuProfile& p, const std::vector<Measurement>& rows, size_t& skipped)
{
  std::map<std::string, std::vector<double>> errors;
  skipped = 0;
  for (const Measurement& m : rows) {
    if (m.gpu != p.gpu)
      throw InputError(m.source + ": measurement of GPU '" + m.gpu + "' checked against a profile of '" + p.gpu + "'");
    double t = predict(p, m);
    if (t < 0) {
      ++skipped;
      continue;
    }
    std::string key = m.benchmark;
    if (m.benchmark == "gemm")
      key += ":" + m.dtype;
    if (is_collective(m.benchmark))
      key += " " + std::to_string(m.ranks) + "x" + std::to_string(m.ranks_per_node);
    errors[key].push_back(t / m.time_s - 1);
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

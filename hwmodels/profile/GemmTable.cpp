#include "GemmTable.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {
namespace {

// The sweeps whose measured errors are blended, and how distance weighs them. Chosen by
// leaving each model's layers out of the H100 and H200 tables in turn (4 sweeps, weights
// 1 / distance: held-out median 3.1-3.9 %; 1 or 2 sweeps follow one neighbour's steps,
// 8 blur them; calibration/VALIDATION.md).
constexpr size_t nearest_sweeps = 4;

// log(measured / model) of sweep `s` at `tokens`, linear in log tokens between its points.
double log_error(const GemmSweep& s, GemmPass pass, const GemmModel& model, double tokens)
{
  auto at = [&](size_t i) {
    double m, n, k;
    gemm_dims(pass, {s.tokens[i], s.a, s.b}, m, n, k);
    return std::log(s.time_s[i] / model.time(m, n, k));
  };
  auto hi = std::lower_bound(s.tokens.begin(), s.tokens.end(), tokens);
  size_t j = static_cast<size_t>(hi - s.tokens.begin());
  if (j < s.tokens.size() && s.tokens[j] == tokens)
    return at(j);
  double lo_t = std::log(s.tokens[j - 1]), hi_t = std::log(s.tokens[j]);
  double f    = (std::log(tokens) - lo_t) / (hi_t - lo_t);
  return (1 - f) * at(j - 1) + f * at(j);
}

} // namespace

GemmSweepPoint sweep_point(GemmPass pass, double m, double n, double k)
{
  return pass == GemmPass::weight_grad ? GemmSweepPoint{k, m, n} : GemmSweepPoint{m, n, k};
}

void gemm_dims(GemmPass pass, const GemmSweepPoint& p, double& m, double& n, double& k)
{
  if (pass == GemmPass::weight_grad)
    m = p.a, n = p.b, k = p.tokens;
  else
    m = p.tokens, n = p.a, k = p.b;
}

void pass_dims(GemmPass pass, double tokens, double out, double in, double& m, double& n, double& k)
{
  switch (pass) {
    case GemmPass::input_grad: m = tokens, n = in, k = out; return;
    case GemmPass::weight_grad: m = out, n = in, k = tokens; return;
    default: m = tokens, n = out, k = in; return;
  }
}

size_t GemmTable::points() const
{
  size_t n = 0;
  for (const GemmSweep& s : sweeps)
    n += s.tokens.size();
  return n;
}

double GemmTable::correction(const GemmModel& model, double m, double n, double k) const
{
  if (sweeps.empty())
    return 0;
  GemmSweepPoint q = sweep_point(pass, m, n, k);
  double a_lo = INFINITY, a_hi = 0, b_lo = INFINITY, b_hi = 0;
  for (const GemmSweep& s : sweeps) {
    a_lo = std::min(a_lo, s.a), a_hi = std::max(a_hi, s.a);
    b_lo = std::min(b_lo, s.b), b_hi = std::max(b_hi, s.b);
  }
  if (q.a < a_lo || q.a > a_hi || q.b < b_lo || q.b > b_hi)
    return 0;
  // The sweeps that reach this token count, nearest shape first.
  std::vector<std::pair<double, const GemmSweep*>> near;
  for (const GemmSweep& s : sweeps)
    if (q.tokens >= s.tokens.front() && q.tokens <= s.tokens.back())
      near.emplace_back(std::hypot(std::log2(q.a / s.a), std::log2(q.b / s.b)), &s);
  if (near.empty())
    return 0;
  size_t take = std::min(nearest_sweeps, near.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<long>(take), near.end(),
                    [](const auto& x, const auto& y) { return x.first < y.first || (x.first == y.first && x.second < y.second); });
  if (near.front().first < 1e-9) // a measured shape: its own sweep alone
    return std::exp(log_error(*near.front().second, pass, model, q.tokens));
  double sum = 0, weights = 0;
  for (size_t i = 0; i < take; ++i) {
    double w = 1 / near[i].first;
    sum += w * log_error(*near[i].second, pass, model, q.tokens);
    weights += w;
  }
  return std::exp(sum / weights);
}

} // namespace memwall

#include "calibration/fit/NelderMead.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace memwall {
namespace {

struct Vertex {
  std::vector<double> x;
  double f;
};

std::vector<double> one_run(const std::function<double(const std::vector<double>&)>& f,
                            const std::vector<double>& start, double step, int budget, int& used)
{
  size_t n  = start.size();
  auto eval = [&](const std::vector<double>& x) {
    ++used;
    double v = f(x);
    return std::isfinite(v) ? v : INFINITY;
  };
  std::vector<Vertex> s;
  s.push_back({start, eval(start)});
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> x = start;
    x[i] += step;
    s.push_back({x, eval(x)});
  }
  auto by_f = [](const Vertex& a, const Vertex& b) { return a.f < b.f; };
  while (used < budget) {
    std::sort(s.begin(), s.end(), by_f);
    if (std::fabs(s.back().f - s.front().f) <= 1e-12 * (1 + std::fabs(s.front().f)))
      break;
    std::vector<double> c(n, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        c[j] += s[i].x[j] / n;
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t j = 0; j < n; ++j)
        x[j] = c[j] + t * (s.back().x[j] - c[j]);
      return x;
    };
    Vertex r{along(-1), 0};
    r.f = eval(r.x);
    if (r.f < s.front().f) {
      Vertex e{along(-2), 0};
      e.f      = eval(e.x);
      s.back() = e.f < r.f ? e : r;
    } else if (r.f < s[n - 1].f) {
      s.back() = r;
    } else {
      Vertex k{along(r.f < s.back().f ? -0.5 : 0.5), 0};
      k.f = eval(k.x);
      if (k.f < std::min(r.f, s.back().f)) {
        s.back() = k;
      } else {
        for (size_t i = 1; i <= n; ++i) {
          for (size_t j = 0; j < n; ++j)
            s[i].x[j] = s[0].x[j] + 0.5 * (s[i].x[j] - s[0].x[j]);
          s[i].f = eval(s[i].x);
        }
      }
    }
  }
  std::sort(s.begin(), s.end(), by_f);
  return s.front().x;
}

} // namespace

std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> start,
                                double step, int max_evaluations)
{
  int used    = 0;
  double best = f(start);
  for (int restart = 0; restart < 4 && used < max_evaluations; ++restart) {
    std::vector<double> x = one_run(f, start, step, max_evaluations, used);
    double v              = f(x);
    bool better           = v < best - 1e-9 * std::fabs(best);
    if (v < best) {
      best  = v;
      start = x;
    }
    if (!better && restart > 0)
      break;
    step *= 0.5;
  }
  return start;
}

} // namespace memwall

#include "hwmodels/profile/GemmModel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace memwall {
namespace {

struct Tile {
  double m, n;
};
// The tile shapes GEMM libraries pick from on Ampere and Hopper tensor cores.
constexpr Tile tiles[]    = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
constexpr double splits[] = {1, 2, 4, 8, 16};

} // namespace

double GemmModel::compute_time(double m, double n, double k, double groups) const
{
  if (m <= 0 || n <= 0 || k <= 0 || peak_flops <= 0)
    return 0;
  double per_sm = peak_flops * efficiency / sms;
  double best   = std::numeric_limits<double>::infinity();
  for (const Tile& t : tiles) {
    double area  = t.m * t.n;
    double eff   = area >= 128 * 128  ? 1.0
                   : area >= 64 * 128 ? small_tile_efficiency
                                      : small_tile_efficiency * small_tile_efficiency;
    double count = groups * std::ceil(m / t.m) * std::ceil(n / t.n);
    for (double s : splits) {
      double waves = std::ceil(count * s / sms);
      best         = std::min(best, waves * 2 * area * (std::ceil(k / s) + k_overhead) / (per_sm * eff));
    }
  }
  return best;
}

double GemmModel::time(double m, double n, double k, double groups) const
{
  double c   = compute_time(m, n, k, groups);
  double mem = bandwidth > 0 ? groups * element_bytes * (m * k + k * n + m * n) / bandwidth : 0.0;
  double hi  = std::max(c, mem);
  if (hi <= 0)
    return launch_s;
  // Scaled p-norm: no overflow for large blend exponents.
  double combined = hi * std::pow(std::pow(c / hi, blend) + std::pow(mem / hi, blend), 1.0 / blend);
  return launch_s + combined;
}

} // namespace memwall

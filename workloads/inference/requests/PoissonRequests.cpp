#include "workloads/inference/requests/PoissonRequests.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace memwall {
namespace {

// Uniform in [0, 1) from the top 53 bits.
double unit(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

int64_t draw(const LengthDistribution& d, std::mt19937_64& g)
{
  if (d.dist == "uniform")
    return d.min + static_cast<int64_t>(unit(g) * static_cast<double>(d.max - d.min + 1));
  if (d.dist == "exponential") {
    double x = -d.mean * std::log1p(-unit(g));
    return std::clamp(static_cast<int64_t>(std::llround(x)), d.min, d.max);
  }
  return d.value;
}

} // namespace

std::vector<Request> poisson_requests(const PoissonConfig& c)
{
  std::mt19937_64 g(c.seed);
  std::vector<Request> out;
  double t = 0;
  for (int64_t i = 0; i < c.requests; ++i) {
    if (i > 0)
      t += -std::log1p(-unit(g)) / c.rate; // exponential inter-arrival gaps
    int64_t prompt = draw(c.prompt, g);
    int64_t output = draw(c.output, g);
    out.push_back({i, t, prompt, output, 0});
  }
  return out;
}

} // namespace memwall

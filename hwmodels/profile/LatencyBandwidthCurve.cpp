#include "hwmodels/profile/LatencyBandwidthCurve.hpp"

#include <algorithm>
#include <stdexcept>

namespace memwall {

const Regime& LatencyBandwidthCurve::regime(double bytes) const
{
  if (regimes.empty())
    throw std::logic_error("empty latency-bandwidth curve");
  // Regimes ascend (the profile reader refuses any other order): a binary search, so a
  // profile of thousands of regimes costs no more per transfer than one of three.
  auto it = std::lower_bound(regimes.begin(), regimes.end(), bytes,
                             [](const Regime& r, double b) { return r.upto_bytes < b; });
  return it == regimes.end() ? regimes.back() : *it;
}

double LatencyBandwidthCurve::time(double bytes) const
{
  const Regime& r = regime(bytes);
  return r.latency_s + (r.bandwidth > 0 ? bytes / r.bandwidth : 0.0);
}

} // namespace memwall

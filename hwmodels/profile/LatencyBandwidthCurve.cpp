#include "hwmodels/profile/LatencyBandwidthCurve.hpp"

#include <stdexcept>

namespace memwall {

const Regime& LatencyBandwidthCurve::regime(double bytes) const
{
  if (regimes.empty())
    throw std::logic_error("empty latency-bandwidth curve");
  for (const Regime& r : regimes)
    if (bytes <= r.upto_bytes)
      return r;
  return regimes.back();
}

double LatencyBandwidthCurve::time(double bytes) const
{
  const Regime& r = regime(bytes);
  return r.latency_s + (r.bandwidth > 0 ? bytes / r.bandwidth : 0.0);
}

} // namespace memwall

#pragma once
// time(bytes) = latency + bytes / bandwidth, piecewise by size regime.
//
// One line fitted over all sizes fails: NCCL switches protocols (LL, LL128, Simple) as
// messages grow, small kernels run from L2, small copies pay a fixed setup. So a curve
// holds up to a few regimes, each valid up to its `upto_bytes`; the last one extends to
// any size. It serves memory-bound kernels, host copies, peer copies and collectives.
#include <vector>

namespace memwall {

struct Regime {
  double upto_bytes = 0; // inclusive upper bound of the regime (the last: any size)
  double latency_s  = 0;
  double bandwidth  = 0; // bytes/s
};

struct LatencyBandwidthCurve {
  std::vector<Regime> regimes; // ascending upto_bytes

  bool empty() const { return regimes.empty(); }
  const Regime& regime(double bytes) const;
  double time(double bytes) const;
  // Bandwidth of the regime that `bytes` falls in (for splitting a time into latency and flow).
  double bandwidth(double bytes) const { return regime(bytes).bandwidth; }
  double latency(double bytes) const { return regime(bytes).latency_s; }
};

} // namespace memwall

#pragma once
// Synthetic requests: Poisson arrivals at `rate` per second, prompt and output lengths
// drawn from simple distributions. Deterministic for a seed on every platform: the
// draws come from std::mt19937_64 (fixed by the standard) through our own inverse
// transforms, never through std:: distributions (implementation-defined).
#include "workloads/inference/requests/Request.hpp"

#include <cstdint>
#include <string>

namespace memwall {

struct LengthDistribution {
  std::string dist = "fixed"; // fixed | uniform | exponential
  int64_t value    = 128;     // fixed
  int64_t min      = 1;       // uniform, exponential (clipped)
  int64_t max      = 1024;
  double mean      = 128; // exponential
};

struct PoissonConfig {
  double rate      = 1.0; // requests per second
  int64_t requests = 100;
  uint64_t seed    = 1;
  LengthDistribution prompt, output;
};

std::vector<Request> poisson_requests(const PoissonConfig& c);

} // namespace memwall

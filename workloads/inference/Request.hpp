#pragma once
// One inference request: when it arrives and how many tokens it brings and wants.
// Where requests come from: a fixed batch (all at t = 0), a trace file (RequestTrace)
// or a synthetic Poisson process (PoissonRequests).
#include <cstdint>
#include <vector>

namespace memwall {

struct Request {
  int64_t id            = 0;
  double arrival_s      = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t row           = 0; // line of the trace file it came from (0: not from a file)
};

// `batch` requests of the same lengths, all arriving at t = 0 (offline generation).
std::vector<Request> fixed_batch(int64_t batch, int64_t prompt_tokens, int64_t output_tokens);

} // namespace memwall

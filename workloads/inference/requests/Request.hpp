#pragma once
// One inference request: when it arrives and how many tokens it brings and wants.
// Where requests come from: a fixed batch (all at t = 0), a trace file (RequestTrace)
// or a synthetic Poisson process (PoissonRequests).
#include <cstdint>
#include <vector>

namespace memwall {

// Why a request was turned away instead of served (vLLM: a prompt over max_model_len is
// refused, as is a prompt whose requested output would pass it; one longer than the
// whole KV cache is ignored).
enum class RejectReason : uint8_t { none, kv_cache, prompt_too_long, exceeds_context };
const char* reject_reason_name(RejectReason r); // "kv_cache", ...

struct Request {
  int64_t id            = 0;
  double arrival_s      = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t row           = 0;                  // line of the trace file it came from (0: not from a file)
  RejectReason reject   = RejectReason::none; // refused on arrival (read_inference_section decides)
};

// `batch` requests of the same lengths, all arriving at t = 0 (offline generation).
std::vector<Request> fixed_batch(int64_t batch, int64_t prompt_tokens, int64_t output_tokens);

} // namespace memwall

#pragma once
// The largest values a spec may give the workload's sizes. Beyond them no real job
// exists, and the op DAG would not fit in memory long before the simulation ended
// (layers = 1e6 or global_batch = 9e15 ran for a minute into bad_alloc). A value past a
// limit is refused with the limit named (ParamReader), never clamped.
#include <cstdint>

namespace memwall::limits {

constexpr int64_t tokens    = 100'000'000; // a sequence, prompt, output or context
constexpr int64_t sequences = 100'000'000; // a batch
constexpr int64_t layers    = 10'000;
constexpr int64_t width     = 10'000'000; // hidden, ffn_hidden
constexpr int64_t heads     = 100'000;
constexpr int64_t vocab     = 100'000'000;
constexpr int64_t experts   = 100'000;   // routed experts of one MoE layer
// One serving run's requests: 100,000 of 512 + 128 tokens at 100 a second replay in about
// 17 s on one core; a million took three minutes (the scheduler's work grows with the
// requests in flight), past what a limit that is documented as usable should allow.
constexpr int64_t requests = 100'000;
// Layer passes one GPU replays per training step: micro-batches x layers of its stage
// (the 1T Megatron example has 512 x 2, a one-GPU GPT-3 with 4,096 micro-batches 393k).
constexpr int64_t layer_passes = 1'000'000;
// Serving arrivals: inference.poisson.rate (per second) and inference.trace_speedup
// (a factor on the trace's own rate); serve-capacity searches within them.
constexpr double min_rate = 1e-6, max_rate = 1e9;
constexpr double min_speedup = 1e-6, max_speedup = 1e6;

} // namespace memwall::limits

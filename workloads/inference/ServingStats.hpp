#pragma once
// What a serving run records beside the replay's own results: one record per request,
// the KV cache's used and reserved bytes after every iteration, and counters. Plain
// data: the replay may run in a forked child and send it back.
#include <cstdint>
#include <string>
#include <vector>

namespace memwall {

struct RequestRecord {
  int64_t id            = 0;
  double arrival_s      = 0;
  double first_token_s  = -1; // -1: never (rejected)
  double finish_s       = -1;
  double max_itl_s      = 0; // longest pause between two consecutive output tokens
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t preemptions   = 0;
  bool rejected         = false;
  uint8_t reject_reason = 0;  // RejectReason (Request.hpp): 1 kv_cache, 2 prompt_too_long, 3 exceeds_context
  double scheduled_s    = -1; // when it left the waiting queue (first ran in an iteration)
};

struct KvSample {
  double time           = 0;
  double used_bytes     = 0; // token states stored (per GPU)
  double reserved_bytes = 0; // slots held for sequences (per GPU)
  int64_t running       = 0;
  int64_t waiting       = 0; // requests arrived and not yet running
};

struct ServingStats {
  bool present = false;
  std::vector<RequestRecord> requests;
  std::vector<KvSample> kv;
  int64_t iterations         = 0;
  int64_t preemptions        = 0;
  int64_t swaps              = 0;
  int64_t max_running_seqs   = 0;
  int64_t kv_capacity_tokens = 0;
  double kv_bytes_per_token  = 0; // per GPU, all layers
  double kv_budget_bytes     = 0; // per GPU, never negative
  // A KV cache that cannot hold one request's smallest reservation (a block when paged,
  // max_model_len when contiguous) serves nothing: the server does not fit, and these
  // are the bytes per GPU it lacks for that reservation (0 when it fits).
  bool kv_no_room           = false;
  double kv_shortfall_bytes = 0;
  // How the engine's start-up sized the KV cache (one line; "" for an engine with no
  // budget), and why it would not start ("" when it starts), in the engine's words.
  std::string kv_accounting;
  std::string kv_refusal;
  // Offloaded KV (FlexGen): the part of each token's KV kept on the host or NVMe, and
  // where; the budget above is the GPU's share only.
  double kv_offloaded_fraction = 0;
  std::string kv_offload_place = "none";
};

} // namespace memwall

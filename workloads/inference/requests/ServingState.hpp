#pragma once
// The requests of a serving run as sequences moving between queues, as vLLM keeps
// them: waiting (arrived, not admitted, or preempted for recompute), running, swapped
// (KV in host memory), finished. Schedulers and KV managers read and move them.
#include "workloads/inference/requests/Request.hpp"

#include <cstddef>
#include <deque>
#include <vector>

namespace memwall {

enum class SeqState { future, waiting, running, swapped, finished };

struct Sequence {
  Request req;
  SeqState state       = SeqState::future;
  int64_t generated    = 0;     // output tokens sampled so far
  int64_t computed     = 0;     // tokens whose KV is in the cache
  bool done            = false; // sampled its last token (static batching keeps it as padding)
  double first_token_s = -1;
  double last_token_s  = -1;
  double max_itl_s     = 0; // longest pause between two of its tokens
  double finish_s      = -1;
  int64_t preemptions  = 0;
  int64_t kv_slots     = 0; // KV token slots this sequence holds (its own; shared prefix blocks not counted)
  bool shares_prefix   = false;
  bool rejected        = false; // could never fit the KV cache: dropped, as vLLM ignores such prompts
  double scheduled_s   = -1;    // when an iteration first ran it: its wait in the queue ended

  int64_t tokens() const { return req.prompt_tokens + generated; } // known tokens
  int64_t pending() const { return tokens() - computed; }          // tokens still to run through the model
  bool prefilling() const { return generated == 0 || pending() > 1; }
};

// Tokens one sequence runs through the model in one iteration; `padding`: a finished
// sequence a static batch still carries (computed, nothing sampled, KV not grown).
struct Work {
  int seq        = 0;
  int64_t tokens = 0;
  bool padding   = false;
};

struct Iteration {
  std::vector<Work> work;
  std::vector<int> swapped_out; // KV moved to host memory before the iteration
  std::vector<int> swapped_in;  // KV moved back before the iteration
  int64_t recomputed = 0;       // sequences preempted by dropping their KV
  std::vector<int> rejected;    // prompts longer than the whole KV cache
  bool empty() const { return work.empty(); }
};

struct ServingLimits {
  int64_t max_num_seqs           = 256;
  int64_t max_num_batched_tokens = 2048;
  bool chunked_prefill           = false;
  bool swap                      = false; // preempt by swapping (else recompute)
  int64_t swap_tokens            = 0;     // host swap space, in tokens
};

struct ServingState {
  std::vector<Sequence> seqs; // by arrival
  size_t next_arrival = 0;
  std::deque<int> waiting;
  std::vector<int> running; // admission order: the newest is preempted first
  std::deque<int> swapped;
  int64_t swap_used = 0; // tokens in host swap space
  ServingLimits limits;

  void admit_arrivals(double now)
  {
    while (next_arrival < seqs.size() && seqs[next_arrival].req.arrival_s <= now) {
      seqs[next_arrival].state = SeqState::waiting;
      waiting.push_back(static_cast<int>(next_arrival++));
    }
  }
  // Requests arrived by `now` and not yet running: the waiting queue and the arrivals
  // not admitted yet.
  int64_t queued(double now) const
  {
    int64_t n = static_cast<int64_t>(waiting.size());
    for (size_t i = next_arrival; i < seqs.size() && seqs[i].req.arrival_s <= now; ++i)
      ++n;
    return n;
  }
  bool all_finished() const
  {
    return next_arrival == seqs.size() && waiting.empty() && running.empty() && swapped.empty();
  }
  double next_arrival_time() const { return next_arrival < seqs.size() ? seqs[next_arrival].req.arrival_s : -1; }
};

} // namespace memwall

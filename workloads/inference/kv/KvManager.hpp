#pragma once
// Where the KV cache of running sequences lives, in token slots. One interface,
// implementations in impl/ registered by name and chosen by `inference.kv_manager`:
//   contiguous  reserves max_model_len slots per request at admission, as serving
//               systems did before paging (Orca, FasterTransformer);
//   paged       blocks of block_size tokens taken as a sequence grows (vLLM), with the
//               full blocks of a shared system prompt held once for everyone.
// The manager only counts slots; the driver turns their changes into alloc/free ops,
// so the memory timeline comes from the replay.
#include "base/Registry.hpp"
#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/inference/requests/ServingState.hpp"

#include <functional>
#include <memory>
#include <string>

namespace memwall {

// What a run gives the manager it starts: the budget and the model's shape.
struct KvManagerParams {
  int64_t capacity_tokens = 0; // slots the KV budget holds (of one group)
  // Attention data-parallel groups pooled in one manager: capacity is groups x the
  // group's, a sequence must fit in one group's, a shared prefix is held by each group.
  int64_t groups        = 1;
  int64_t max_model_len = 0;
  // Sliding-window layers (vLLM's hybrid KV cache manager, TensorRT-LLM's cyclic KV):
  // their share of a token's KV bytes and their window. They keep only a sequence's
  // last `window` tokens, so a longer sequence holds less than a slot per token.
  double windowed_share = 0;
  int64_t window        = 0;
};

// The configured object a spec picks (its keys read by the registry's factory) is the
// prototype of the managers each run starts (start()), which count the slots.
class KvManager : public Implementation {
public:
  // A manager of this kind and configuration for one run, its slots all free.
  virtual std::unique_ptr<KvManager> start(const KvManagerParams& p) const = 0;

  // What the rest of the server asks of the configuration:
  // preempted sequences' KV swapped to host memory (else dropped and recomputed), into
  // this much host memory per GPU (every manager's keys);
  bool swaps() const { return swaps_; }
  double swap_space_bytes() const { return swap_space_; }
  // tokens of a system prompt every prompt starts with, whose KV is held once;
  virtual int64_t shared_prefix() const { return 0; }
  // "" when a sequence's slots grow one token at a time and nothing is shared (as a
  // DynamicCache grows), else the key of the inference section that says otherwise;
  virtual std::string key_against_token_growth() const = 0;
  // whether a request reserves its whole context at admission (what paging avoids);
  virtual bool reserves_whole_context() const { return false; }
  // the run's summary: "paged KV (block 16, preempt by recompute)".
  virtual std::string summary() const { return name() + " KV"; }

  // Grows s's reservation to hold `tokens` tokens; false (and nothing changes) if the
  // free slots do not suffice.
  virtual bool reserve(Sequence& s, int64_t tokens) = 0;
  virtual void release(Sequence& s)                 = 0;
  // Slots one sequence of `tokens` tokens takes.
  virtual int64_t slots_for(int64_t tokens) const = 0;
  // Tokens at the start of s's prompt whose KV already sits in the cache (shared prefix).
  virtual int64_t cached_prefix(const Sequence&) const { return 0; }
  // Token states actually stored, counting shared ones once.
  virtual int64_t stored_tokens(const ServingState& st) const;
  // Slots the KV of `tokens` tokens takes when held in `granule`-token blocks: a slot
  // per token, less the windowed layers' share of the tokens behind their window (a
  // block-granular window keeps the block it straddles too).
  int64_t held(int64_t tokens, int64_t granule = 1) const;

  int64_t capacity() const { return p_.capacity_tokens * p_.groups; }
  int64_t sequence_capacity() const { return p_.capacity_tokens; } // the most one sequence may take
  int64_t reserved() const { return reserved_; }
  int64_t free_slots() const { return capacity() - reserved_; }

protected:
  // Reads the keys every manager has (SST's parameters of a base spliced into each
  // derived one): how a preempted sequence's KV goes, and the host memory it may go to.
  explicit KvManager(ParamReader& inference);
  // Starts counting a run's slots (start() of a copy of the prototype).
  void open(const KvManagerParams& p)
  {
    p_        = p;
    reserved_ = 0;
  }

  KvManagerParams p_;
  bool swaps_        = false;
  double swap_space_ = 0;
  int64_t reserved_  = 0;
};

// Reads the manager's keys from the `inference` section, defaulting to the engine's.
using KvManagerFactory = std::function<std::unique_ptr<KvManager>(ParamReader& inference, const EngineDefaults&)>;
Registry<KvManagerFactory>& kv_manager_registry();

} // namespace memwall

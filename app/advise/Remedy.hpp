#pragma once
// One standard remedy for a configuration that does not fit in memory (smaller
// micro-batch, recompute, ZeRO, offload, ...). Implementations live in impl/, register
// by name with their place in the practitioners' order (cheapest first), and propose
// spec changes; `memwall advise` simulates every proposal.
#include "base/Registry.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

// One concrete change: what a person reads, and the --set overrides that make it.
struct RemedyTry {
  std::string change;                 // "micro_batch 2 (16 micro-batches per step)"
  std::vector<std::string> overrides; // {"training.micro_batch=2"}
};

class Remedy {
public:
  virtual ~Remedy() = default;
  // Place in the order of cost: lower is tried and recommended first.
  virtual int cost_order() const   = 0;
  virtual bool for_serving() const = 0;
  // The changes to simulate, most preferred first (the first that fits is the remedy's
  // answer); empty when it does not apply (e.g. recompute already full).
  virtual std::vector<RemedyTry> tries(const ExperimentSpec& spec) const = 0;
  // Whether it trains something else (adapters on a frozen base, not the weights): said
  // beside the answers, never one of them, paired or stacked.
  virtual bool changes_what_trains() const { return false; }
};

// The stack a remedy that shards or offloads model states runs on: the spec's own where
// it can (megatron, deepspeed, fsdp), else DeepSpeed driving the same Hugging Face
// modules, as the Trainer does with `deepspeed=` (a `pytorch` job is plain DDP: no ZeRO,
// no offload). `change` names the switch ("" when none), `overrides` make it.
using ShardingStack = StackSwitch;
ShardingStack sharding_stack(const ExperimentSpec& spec);

using RemedyFactory = std::function<std::unique_ptr<Remedy>()>;
Registry<RemedyFactory>& remedy_registry();

struct NamedRemedy {
  std::string name, description;
  std::unique_ptr<Remedy> remedy;
};
// The remedies for training or serving, cheapest first.
std::vector<NamedRemedy> remedies_in_cost_order(bool serving);

} // namespace memwall

#pragma once
// One dimension of the layouts `memwall optimize` searches (tp, pp, micro-batch, ZeRO
// stage, ...). Implementations live in impl/, register by name with their place in the
// enumeration (an axis reads only the choices of axes before it: pp after tp, the
// micro-batch after dp), and propose the values worth trying for the job; the spec's own
// validation, not the axis, is the judge of what is valid. `memwall list layout-axes`
// prints them; `--axis KEY=V1,V2` replaces an axis's values.
#include "base/Registry.hpp"
#include "sim/spec/ExperimentSpec.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace memwall {

// What every layout of one search shares: the job (the spec at this GPU count; its own
// layout keys are what the search replaces) and the GPUs it has.
struct SearchSpace {
  const ExperimentSpec& job;
  int64_t gpus          = 0;
  int64_t gpus_per_node = 0;
};

// A layout as the axes build it: the settings chosen so far (spec key, value as YAML
// text) and the training section they make, which later axes read.
struct PartialLayout {
  std::vector<std::pair<std::string, std::string>> settings;
  TrainingConfig t;
};

class LayoutAxis {
public:
  virtual ~LayoutAxis() = default;
  // Place in the enumeration: lower runs first.
  virtual int order() const = 0;
  // The spec key this axis sets (training.tp).
  virtual std::string key() const = 0;
  // Whether this search has the axis at all (expert parallelism: an MoE model only).
  virtual bool applies(const SearchSpace&) const { return true; }
  // The values worth trying after the earlier axes' choices in `l`, as YAML text.
  virtual std::vector<std::string> values(const PartialLayout& l, const SearchSpace& s) const = 0;
  // Sets `value` (one of values(), or one the user gave) in l.t; InputError if it is
  // not a value of this key (checked on the user's values before anything runs).
  virtual void apply(PartialLayout& l, const std::string& value) const = 0;
  // The value a training section has on this axis (a spec's own layout).
  virtual std::string value_of(const TrainingConfig& t) const = 0;
};

// An axis over one whole-number field of the training section (tp, pp, micro_batch):
// implementations give only the values worth trying.
class IntegerAxis : public LayoutAxis {
public:
  IntegerAxis(int order, std::string key, int64_t TrainingConfig::*field)
      : order_(order), key_(std::move(key)), field_(field)
  {}
  int order() const override { return order_; }
  std::string key() const override { return key_; }
  void apply(PartialLayout& l, const std::string& value) const override;
  std::string value_of(const TrainingConfig& t) const override { return std::to_string(t.*field_); }

private:
  int order_;
  std::string key_;
  int64_t TrainingConfig::*field_;
};

using LayoutAxisFactory = std::function<std::unique_ptr<LayoutAxis>()>;
Registry<LayoutAxisFactory>& layout_axis_registry();

struct NamedAxis {
  std::string name, description;
  std::unique_ptr<LayoutAxis> axis;
};
// Every axis, in enumeration order.
std::vector<NamedAxis> layout_axes_in_order();

// Helpers of the axes.
std::vector<int64_t> divisors(int64_t n); // ascending
// The layers worth giving one end stage of `stages` that split `layers` (Megatron-Core's
// --decoder-first/last-pipeline-num-layers): 0 (an even split) where the stages divide
// the layers, and the most below the others' share that leaves the rest an even split
// (the end stage lighter: the last holds the head and loss, the first the most
// micro-batches in flight). Empty: no split of either kind.
std::vector<int64_t> lighter_end_stage(int64_t layers, int64_t stages);
int64_t axis_integer(const std::string& key, const std::string& value);
bool axis_flag(const std::string& key, const std::string& value);

} // namespace memwall

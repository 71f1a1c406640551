// Offloading model states to the host, for a stack that does it (DeepSpeed's
// ZeRO-Offload and ZeRO-Infinity): the optimizer with ZeRO >= 1 and no pipeline, the
// parameters too under ZeRO-3. NVMe is tried only when --axis names it.
#include "app/optimize/LayoutAxis.hpp"
#include "base/InputError.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

OffloadTarget target(const std::string& key, const std::string& value)
{
  if (value == "none")
    return OffloadTarget::none;
  if (value == "cpu")
    return OffloadTarget::cpu;
  if (value == "nvme")
    return OffloadTarget::nvme;
  throw InputError("--axis " + key + ": '" + value + "' is not one of none, cpu, nvme");
}

std::string name(OffloadTarget t)
{
  return t == OffloadTarget::cpu ? "cpu" : t == OffloadTarget::nvme ? "nvme" : "none";
}

bool offloads(const PartialLayout& l) { return l.t.stack->offloads_states(); }

class OptimizerOffloadAxis final : public LayoutAxis {
public:
  int order() const override { return 120; }
  std::string key() const override { return "training.offload.optimizer"; }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace&) const override
  {
    if (offloads(l) && l.t.zero >= 1 && l.t.pp == 1)
      return {"none", "cpu"};
    return {"none"};
  }
  std::string value_of(const TrainingConfig& t) const override { return name(t.offload_optimizer); }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    l.t.offload_optimizer = target(key(), value);
    l.settings.emplace_back(key(), value);
  }
};

class ParamOffloadAxis final : public LayoutAxis {
public:
  int order() const override { return 130; }
  std::string key() const override { return "training.offload.params"; }
  std::vector<std::string> values(const PartialLayout& l, const SearchSpace&) const override
  {
    if (offloads(l) && l.t.zero == 3 && l.t.offload_optimizer != OffloadTarget::none)
      return {"none", "cpu"};
    return {"none"};
  }
  std::string value_of(const TrainingConfig& t) const override { return name(t.offload_params); }
  void apply(PartialLayout& l, const std::string& value) const override
  {
    l.t.offload_params = target(key(), value);
    l.settings.emplace_back(key(), value);
  }
};

const bool optimizer = layout_axis_registry().add("offload_optimizer", "optimizer states to the host (DeepSpeed)",
                                                  [] { return std::make_unique<OptimizerOffloadAxis>(); });
const bool params    = layout_axis_registry().add("offload_params", "parameters to the host under ZeRO-3",
                                                  [] { return std::make_unique<ParamOffloadAxis>(); });

} // namespace
} // namespace memwall

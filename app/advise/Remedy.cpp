#include "app/advise/Remedy.hpp"

#include <algorithm>

namespace memwall {

Registry<RemedyFactory>& remedy_registry()
{
  static Registry<RemedyFactory> registry("remedy", "advise", "remedies");
  return registry;
}

ShardingStack sharding_stack(const ExperimentSpec& spec)
{
  // A replayed trace reads no training section: no stack, nothing to switch to.
  return spec.training.stack ? spec.training.stack->sharding_switch() : StackSwitch{};
}

std::vector<NamedRemedy> remedies_in_cost_order(bool serving)
{
  std::vector<NamedRemedy> out;
  for (const auto& [name, entry] : remedy_registry().entries()) {
    auto r = entry.make();
    if (r->for_serving() == serving)
      out.push_back({name, entry.description, std::move(r)});
  }
  std::stable_sort(out.begin(), out.end(), [](const NamedRemedy& a, const NamedRemedy& b) {
    return a.remedy->cost_order() < b.remedy->cost_order();
  });
  return out;
}

} // namespace memwall

#include "CollectiveAlgorithm.hpp"

#include "InputError.hpp"

namespace memwall {

std::map<std::string, CollectiveInfo>& collective_registry()
{
  static std::map<std::string, CollectiveInfo> registry;
  return registry;
}

bool register_collective(const std::string& name, const std::string& description, CollectiveFactory make)
{
  collective_registry()[name] = {description, std::move(make)};
  return true;
}

std::unique_ptr<CollectiveAlgorithm> make_collective(const std::string& name)
{
  auto& reg = collective_registry();
  auto it   = reg.find(name);
  if (it == reg.end()) {
    std::string allowed;
    for (const auto& [n, info] : reg)
      allowed += (allowed.empty() ? "" : ", ") + n;
    throw InputError("unknown collective algorithm '" + name + "'; allowed: " + allowed);
  }
  return it->second.make();
}

} // namespace memwall

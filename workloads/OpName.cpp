#include "OpName.hpp"

#include <deque>
#include <unordered_map>

namespace memwall {
namespace {

struct NameTable {
  std::deque<std::string> names{std::string()}; // deque: references stay valid as it grows
  std::unordered_map<std::string, uint32_t> ids{{std::string(), 0}};
};

NameTable& table()
{
  static NameTable t;
  return t;
}

} // namespace

uint32_t OpName::intern(const std::string& s)
{
  NameTable& t     = table();
  auto [it, fresh] = t.ids.try_emplace(s, static_cast<uint32_t>(t.names.size()));
  if (fresh)
    t.names.push_back(s);
  return it->second;
}

const std::string& OpName::str() const { return table().names[id_]; }

} // namespace memwall

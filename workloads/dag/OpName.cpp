#include "workloads/dag/OpName.hpp"

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

size_t OpName::interned_count() { return table().names.size(); }

// A pattern keeps the number's place as one control character no name holds.
constexpr char number_mark = '\x1f';

OpName::OpName(const std::string& prefix, uint64_t number, const std::string& suffix)
{
  if (number >= no_number) { // past what a handle holds: the whole name, interned
    id_ = intern(prefix + std::to_string(number) + suffix);
    return;
  }
  id_     = intern(prefix + number_mark + suffix);
  number_ = static_cast<uint32_t>(number);
}

OpName OpName::numbered(uint64_t number) const
{
  if (number_ == no_number) // no pattern: the number goes at the end
    return OpName(str(), number, "");
  if (number >= no_number) { // past what a handle holds: the whole name, interned
    const std::string& pattern = table().names[id_];
    size_t mark                = pattern.find(number_mark);
    return OpName(pattern.substr(0, mark), number, pattern.substr(mark + 1));
  }
  OpName n  = *this;
  n.number_ = static_cast<uint32_t>(number);
  return n;
}

std::string OpName::str() const
{
  const std::string& s = table().names[id_];
  if (number_ == no_number)
    return s;
  size_t mark = s.find(number_mark);
  return s.substr(0, mark) + std::to_string(number_) + s.substr(mark + 1);
}

} // namespace memwall

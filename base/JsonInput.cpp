#include "base/JsonInput.hpp"

#include <unordered_set>
#include <vector>

namespace memwall {
namespace {

struct Refused {
  std::string why;
};

template <typename Json>
std::string parse_checked(const std::string& text, Json& out)
{
  using event = typename Json::parse_event_t;
  // One set of keys per object being read, innermost last.
  std::vector<std::unordered_set<std::string>> keys;
  auto check = [&](int depth, event e, Json& parsed) {
    if ((e == event::object_start || e == event::array_start) && depth >= json_max_depth)
      throw Refused{"nested deeper than " + std::to_string(json_max_depth) + " levels"};
    if (e == event::object_start)
      keys.emplace_back();
    else if (e == event::object_end && !keys.empty())
      keys.pop_back();
    else if (e == event::key && !keys.empty() && !keys.back().insert(parsed.template get<std::string>()).second)
      throw Refused{"key '" + parsed.template get<std::string>() + "' given twice in one object"};
    return true;
  };
  try {
    out = Json::parse(text, check);
  } catch (const Refused& r) {
    out = Json();
    return r.why;
  } catch (const typename Json::exception& e) { // parse_error; out_of_range for 1e400
    out = Json();
    return e.what();
  }
  return "";
}

} // namespace

std::string parse_json_checked(const std::string& text, nlohmann::json& out) { return parse_checked(text, out); }

std::string parse_json_checked(const std::string& text, nlohmann::ordered_json& out)
{
  return parse_checked(text, out);
}

} // namespace memwall

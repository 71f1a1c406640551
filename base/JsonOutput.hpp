#pragma once
// JSON text of what memwall writes (summaries, results files' attributes, traces). Its
// strings may hold bytes that are not UTF-8 (a profile's file name, a kernel's name
// from a trace), on which nlohmann's dump throws: a run then ended in exit 3 after all
// its work. Such bytes are written as U+FFFD instead.
#include <nlohmann/json.hpp>

#include <string>

namespace memwall {

template <class Json>
std::string json_text(const Json& j, int indent = -1)
{
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace memwall

#pragma once
// JSON from outside memwall (HF configs, request traces, nvbandwidth output, results
// files' attributes), parsed into values that are safe to use. nlohmann's parser is
// iterative, but copying, dumping and comparing a value recurse: a config nested
// 100,000 levels deep parsed and then overflowed the stack. And nlohmann keeps the last
// of a key given twice, silently; a config that says two things is refused instead.
#include <nlohmann/json.hpp>

#include <string>

namespace memwall {

// Deeper than any file memwall reads needs (HF configs nest 3 levels, traces 5).
inline constexpr int json_max_depth = 256;

// Parses `text` into `out`; returns why it is refused ("" when it parsed): malformed
// (nlohmann's message), a number out of range, nested deeper than json_max_depth, or
// a key given twice in one object.
std::string parse_json_checked(const std::string& text, nlohmann::json& out);
std::string parse_json_checked(const std::string& text, nlohmann::ordered_json& out);

} // namespace memwall

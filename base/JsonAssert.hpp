#pragma once
// Included first in every C++ file (CMakeLists.txt: --include), before any nlohmann
// header. nlohmann/json checks some preconditions with assert(): reading a missing key
// of a const object, for one, which in a release build is undefined behaviour. memwall
// reads JSON it did not write (a results file's summary, configs, traces), so a broken
// one must be an exception the command reports, never a crash or a wrong answer.
// (A call, not a throw-expression: a few of the checks sit in noexcept functions,
// where a failure ends the process as assert() would.)
#include <stdexcept>

[[noreturn]] inline void memwall_json_assert_failed(const char* check)
{
  throw std::out_of_range(std::string("JSON value without the key or element read (") + check + ")");
}

#define JSON_ASSERT(x) ((x) ? static_cast<void>(0) : ::memwall_json_assert_failed(#x))

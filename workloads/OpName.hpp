#pragma once
// An op's name, interned: the same few thousand names ("L3.fwd.qkv") recur in every
// micro-batch of every stage, so a DAG of millions of ops holds a 4-byte handle per op
// instead of a string (and a heap block for every name past 15 characters).
#include <cstdint>
#include <string>

namespace memwall {

class OpName {
public:
  OpName() = default;
  OpName(const std::string& s) : id_(intern(s)) {} // NOLINT: a name is a string
  OpName(const char* s) : id_(intern(s)) {}        // NOLINT
  const std::string& str() const;
  operator const std::string&() const { return str(); } // NOLINT
  bool operator==(const OpName& o) const { return id_ == o.id_; }

private:
  // The process's table of names, never shrinking (names outlive any one DAG). Id 0
  // is the empty name.
  static uint32_t intern(const std::string& s);
  uint32_t id_ = 0;
};

} // namespace memwall

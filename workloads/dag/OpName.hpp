#pragma once
// An op's name, interned: the same few thousand names ("L3.fwd.qkv") recur in every
// micro-batch of every stage, so a DAG of millions of ops holds a handle per op instead
// of a string (and a heap block for every name past 15 characters).
//
// A name that carries a counter ("it7123.embed": a serving loop's iteration) is its
// pattern interned once plus the number, so a loop of a million iterations adds no name
// to the table: the table holds what recurs, and stays bounded.
#include <cstdint>
#include <string>

namespace memwall {

class OpName {
public:
  OpName() = default;
  OpName(const std::string& s) : id_(intern(s)) {} // NOLINT: a name is a string
  OpName(const char* s) : id_(intern(s)) {}        // NOLINT
  // prefix + number + suffix, e.g. ("it", 7123, ".embed").
  OpName(const std::string& prefix, uint64_t number, const std::string& suffix);
  // The same pattern with another number: a name made with a number, renumbered without
  // interning its pattern again (a pipeline's sends, one per micro-batch).
  OpName numbered(uint64_t number) const;
  std::string str() const;
  operator std::string() const { return str(); } // NOLINT
  bool operator==(const OpName& o) const { return id_ == o.id_ && number_ == o.number_; }
  // How many names and patterns the process's table holds.
  static size_t interned_count();

private:
  static constexpr uint32_t no_number = 0xffffffffu;
  // The process's table of names and patterns, never shrinking (names outlive any one
  // DAG). Id 0 is the empty name.
  static uint32_t intern(const std::string& s);
  uint32_t id_     = 0;
  uint32_t number_ = no_number;
};

} // namespace memwall

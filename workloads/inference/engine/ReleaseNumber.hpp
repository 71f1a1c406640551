#pragma once
// A serving engine's release number as its project tags it: 0.6.4, 0.4.7.post1, v0.5.3,
// 0.6.0rc1. Ordered, so an engine finds the rule a release falls under.
#include <optional>
#include <string>

namespace memwall {

struct ReleaseNumber {
  int major = 0, minor = 0, patch = 0, post = 0; // post: the N of .postN (an rc counts as 0)
  static std::optional<ReleaseNumber> parse(const std::string& text);
  bool operator<(const ReleaseNumber& o) const;
  std::string str() const; // "0.4.7.post1", "0.6.4"
};

} // namespace memwall

#pragma once
// A software release's number as its project tags it (a serving engine's, transformers'):
// 0.6.4, 0.10.1.1 (a hotfix), 0.4.7.post1, v0.5.3, 0.8.0rc1, 4.44.2. Ordered as the
// releases came out (an rc before its release), so a model of the software finds the rule
// a release falls under.
#include <optional>
#include <string>

namespace memwall {

struct ReleaseNumber {
  int major = 0, minor = 0, patch = 0;
  int hotfix = 0;  // the fourth number: vLLM's 0.10.1.1
  int post   = 0;  // the N of .postN
  int rc     = -1; // the N of rcN (SGLang tags rc0); -1 for the release itself
  static std::optional<ReleaseNumber> parse(const std::string& text);
  bool operator<(const ReleaseNumber& o) const;
  // Whether this release has the rules of the releases from `first` on: an rc has its
  // release's (cut from that release's branch), though it sorts before it.
  bool from(const ReleaseNumber& first) const;
  std::string str() const; // "0.4.7.post1", "0.10.1.1", "0.8.0rc1"
};

} // namespace memwall

#include "base/ReleaseNumber.hpp"

#include <climits>
#include <regex>
#include <tuple>

namespace memwall {

std::optional<ReleaseNumber> ReleaseNumber::parse(const std::string& text)
{
  static const std::regex form(
      R"(v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?(?:\.post(\d{1,3})|rc(\d{1,3}))?)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    return std::nullopt;
  auto number = [&](size_t i) { return m[i].matched ? std::stoi(m[i].str()) : 0; };
  ReleaseNumber v;
  v.major  = number(1);
  v.minor  = number(2);
  v.patch  = number(3);
  v.hotfix = number(4);
  v.post   = number(5);
  v.rc     = m[6].matched ? number(6) : -1;
  return v;
}

bool ReleaseNumber::operator<(const ReleaseNumber& o) const
{
  // A release candidate comes before its release: the release itself sorts as rc "infinity".
  const int rc_order = rc >= 0 ? rc : INT_MAX, o_rc_order = o.rc >= 0 ? o.rc : INT_MAX;
  return std::tie(major, minor, patch, hotfix, post, rc_order) <
         std::tie(o.major, o.minor, o.patch, o.hotfix, o.post, o_rc_order);
}

bool ReleaseNumber::from(const ReleaseNumber& first) const
{
  ReleaseNumber release = *this;
  release.rc            = -1;
  return !(release < first);
}

std::string ReleaseNumber::str() const
{
  std::string s = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  if (hotfix > 0)
    s += "." + std::to_string(hotfix);
  if (post > 0)
    s += ".post" + std::to_string(post);
  if (rc >= 0)
    s += "rc" + std::to_string(rc);
  return s;
}

} // namespace memwall

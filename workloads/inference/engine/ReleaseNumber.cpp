#include "workloads/inference/engine/ReleaseNumber.hpp"

#include <regex>
#include <tuple>

namespace memwall {

std::optional<ReleaseNumber> ReleaseNumber::parse(const std::string& text)
{
  static const std::regex form(R"(v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?(?:\.post(\d{1,3})|rc\d{1,3})?)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    return std::nullopt;
  ReleaseNumber v;
  v.major = std::stoi(m[1].str());
  v.minor = std::stoi(m[2].str());
  v.patch = m[3].matched ? std::stoi(m[3].str()) : 0;
  v.post  = m[4].matched ? std::stoi(m[4].str()) : 0;
  return v;
}

bool ReleaseNumber::operator<(const ReleaseNumber& o) const
{
  return std::tie(major, minor, patch, post) < std::tie(o.major, o.minor, o.patch, o.post);
}

std::string ReleaseNumber::str() const
{
  std::string s = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  return post > 0 ? s + ".post" + std::to_string(post) : s;
}

} // namespace memwall

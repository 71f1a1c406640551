#include "sim/replay/LinkAccounts.hpp"

namespace memwall {

int LinkAccounts::add_link()
{
  active_.push_back(0);
  busy_since_.push_back(0);
  busy_.push_back(0);
  bytes_.push_back(0);
  return static_cast<int>(bytes_.size() - 1);
}

void LinkAccounts::flow_started(const std::vector<int>& links, double bytes, double now)
{
  for (int l : links) {
    if (active_[l]++ == 0)
      busy_since_[l] = now;
    bytes_[l] += bytes;
  }
}

void LinkAccounts::flow_ended(const std::vector<int>& links, double now)
{
  for (int l : links)
    if (--active_[l] == 0)
      busy_[l] += now - busy_since_[l];
}

} // namespace memwall

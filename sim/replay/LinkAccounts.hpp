#pragma once
// What every link of the platform carried and how long it was busy, as the replay's
// flows start and end on it (RunResult::links). A link is busy while at least one flow
// crosses it: its busy time is the union of its flows' intervals, not their sum. What a
// kernel alone on its HBM or a coalesced run would have put on a link comes in by add(),
// without a flow. Knows nothing of SimGrid: links are numbers (RouteTable numbers them).
#include <cstddef>
#include <vector>

namespace memwall {

class LinkAccounts {
public:
  // A new link, idle and empty; its number.
  int add_link();
  size_t size() const { return bytes_.size(); }

  // A flow of `bytes` starts at `now` on every link of `links` / ends at `now`.
  void flow_started(const std::vector<int>& links, double bytes, double now);
  void flow_ended(const std::vector<int>& links, double now);
  // Bytes and busy seconds a link carried without a flow of its own. Inline: a run adds
  // its members' figures one by one, millions of times a step.
  void add(int link, double bytes, double busy_s)
  {
    bytes_[static_cast<size_t>(link)] += bytes;
    busy_[static_cast<size_t>(link)] += busy_s;
  }

  double bytes(int link) const { return bytes_[static_cast<size_t>(link)]; }
  double busy(int link) const { return busy_[static_cast<size_t>(link)]; }
  // Every link's figures, for what rewrites them at the end (OrbitFold::mirror).
  std::vector<double>& all_bytes() { return bytes_; }
  std::vector<double>& all_busy() { return busy_; }

private:
  std::vector<int> active_;        // flows on the link now
  std::vector<double> busy_since_; // when the first of them started
  std::vector<double> busy_, bytes_;
};

} // namespace memwall

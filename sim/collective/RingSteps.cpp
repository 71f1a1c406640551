#include "sim/collective/RingSteps.hpp"

#include <algorithm>
#include <map>

namespace memwall {

CollectivePhase ring_step(const std::vector<DeviceRef>& members, double bytes)
{
  return ring_step(std::vector<std::vector<DeviceRef>>{members}, bytes);
}

CollectivePhase ring_step(const std::vector<std::vector<DeviceRef>>& rings, double bytes)
{
  CollectivePhase p;
  for (const auto& ring : rings)
    for (size_t k = 0; k < ring.size() && ring.size() > 1; ++k)
      p.flows.push_back({ring[k], ring[(k + 1) % ring.size()], bytes});
  return p;
}

void append_bulk_steps(std::vector<CollectivePhase>& phases, const std::vector<std::vector<DeviceRef>>& rings,
                       int steps, double chunk, double hop_latency)
{
  if (steps <= 0)
    return;
  phases.push_back(ring_step(rings, steps * chunk));
  // One step's latency is already on the flows' routes; the other steps' are not.
  if (steps > 1 && hop_latency > 0)
    phases.push_back({{}, (steps - 1) * hop_latency});
}

int ring_steps(CollectiveKind kind, size_t n)
{
  int m = static_cast<int>(n) - 1;
  return kind == CollectiveKind::all_reduce ? 2 * m : m;
}

double ring_chunk(CollectiveKind /*kind*/, size_t n, double bytes)
{
  // Every step moves one n-th of the buffer: reduce-scatter and all-gather take n-1
  // steps, all-reduce (one of each) 2(n-1).
  return bytes / static_cast<double>(n);
}

namespace {

// Members by node in group order, when every node holds the same local indices.
bool node_grid(const std::vector<DeviceRef>& group, std::vector<std::vector<DeviceRef>>& nodes)
{
  std::map<int, std::vector<DeviceRef>> by_node;
  for (const DeviceRef& d : group)
    by_node[d.node].push_back(d);
  for (const auto& [n, members] : by_node)
    nodes.push_back(members);
  for (auto& members : nodes) {
    std::sort(members.begin(), members.end(), [](const DeviceRef& a, const DeviceRef& b) { return a.index < b.index; });
    if (members.size() != nodes[0].size())
      return false;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i].index != nodes[0][i].index)
        return false;
  }
  return true;
}

} // namespace

CollectivePhase all_to_all_phase(const std::vector<DeviceRef>& group, double bytes, bool switched_nodes)
{
  const size_t n = group.size();
  CollectivePhase p;
  std::vector<std::vector<DeviceRef>> nodes;
  if (!node_grid(group, nodes) || (!switched_nodes && nodes[0].size() > 1)) {
    for (const auto& a : group)
      for (const auto& b : group)
        if (a != b)
          p.flows.push_back({a, b, bytes / static_cast<double>(n)});
    return p;
  }
  const size_t k = nodes.size(), g = nodes[0].size();
  const double share = bytes / static_cast<double>(n);
  for (size_t m = 0; m < k; ++m)
    for (size_t i = 0; i < g; ++i) {
      if (g > 1)
        p.flows.push_back({nodes[m][i], nodes[m][(i + 1) % g], static_cast<double>(g - 1) * share});
      if (k > 1)
        p.flows.push_back({nodes[m][i], nodes[(m + 1) % k][i], static_cast<double>((k - 1) * g) * share});
    }
  return p;
}

} // namespace memwall

#include "ParallelLayout.hpp"

#include <algorithm>

namespace memwall {

ParallelLayout::ParallelLayout(int64_t tp, int64_t pp, int64_t dp, int gpus_per_node, int64_t ep, int64_t cp)
    : tp_(tp), pp_(pp), dp_(dp), ep_(ep), cp_(cp), gpus_per_node_(gpus_per_node)
{
}

DeviceRef ParallelLayout::device(int64_t t, int64_t d, int64_t p) const
{
  int64_t rank = t + tp_ * (d + dp_ * p);
  return DeviceRef{DeviceKind::gpu, static_cast<int>(rank / gpus_per_node_), static_cast<int>(rank % gpus_per_node_)};
}

std::vector<DeviceRef> ParallelLayout::tp_group_of(int64_t d, int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t t = 0; t < tp_; ++t)
    g.push_back(device(t, d, stage));
  return g;
}

std::vector<DeviceRef> ParallelLayout::strided(int64_t t, int64_t first, int64_t stride, int64_t count,
                                               int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t j = 0; j < count; ++j)
    g.push_back(device(t, first + j * stride, stage));
  return g;
}

std::vector<DeviceRef> ParallelLayout::tp_group(int64_t stage) const { return tp_group_of(0, stage); }

std::vector<DeviceRef> ParallelLayout::dp_group(int64_t stage) const { return strided(0, 0, 1, dp_, stage); }

std::vector<std::vector<DeviceRef>> ParallelLayout::on_node(
    int64_t stage, int64_t count, const std::function<std::vector<DeviceRef>(int64_t)>& group) const
{
  std::vector<std::vector<DeviceRef>> groups;
  int node = representative(stage).node;
  for (int64_t i = 1; i < count; ++i) {
    std::vector<DeviceRef> g = group(i);
    if (std::any_of(g.begin(), g.end(), [&](const DeviceRef& d) { return d.node == node; }))
      groups.push_back(std::move(g));
  }
  return groups;
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_tp_groups(int64_t stage) const
{
  return on_node(stage, dp_, [&](int64_t d) { return tp_group_of(d, stage); }); // tp group d holds ranks (t, d)
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_dp_groups(int64_t stage) const
{
  return on_node(stage, tp_, [&](int64_t t) { return strided(t, 0, 1, dp_, stage); }); // dp group t: ranks (t, d)
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_spans(int64_t size, int64_t stage) const
{
  // Span i = t * (dp / size) + k holds ranks (t, k size .. k size + size - 1).
  const int64_t spans = dp_ / size;
  return on_node(stage, tp_ * spans, [&](int64_t i) { return strided(i / spans, (i % spans) * size, 1, size, stage); });
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_edp_groups(int64_t stage) const
{
  // Group i = t * ep + j holds ranks (t, j), (t, j + ep), ...
  return on_node(stage, tp_ * ep_, [&](int64_t i) { return strided(i / ep_, i % ep_, ep_, dp_ / ep_, stage); });
}

std::vector<DeviceRef> ParallelLayout::node_peers(int64_t stage) const
{
  DeviceRef rep = representative(stage);
  std::vector<DeviceRef> peers;
  for (int64_t d = 0; d < dp_; ++d)
    for (int64_t t = 0; t < tp_; ++t) {
      DeviceRef r = device(t, d, stage);
      if (r.node == rep.node && r != rep)
        peers.push_back(r);
    }
  return peers;
}

} // namespace memwall

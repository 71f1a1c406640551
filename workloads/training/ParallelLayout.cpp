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

std::vector<DeviceRef> ParallelLayout::dp_group_of(int64_t t, int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t d = 0; d < dp_; ++d)
    g.push_back(device(t, d, stage));
  return g;
}

std::vector<DeviceRef> ParallelLayout::tp_group(int64_t stage) const { return tp_group_of(0, stage); }

std::vector<DeviceRef> ParallelLayout::dp_group(int64_t stage) const { return dp_group_of(0, stage); }

std::vector<std::vector<DeviceRef>> ParallelLayout::groups_on_node(
    int64_t stage, int64_t count, std::vector<DeviceRef> (ParallelLayout::*group_of)(int64_t, int64_t) const) const
{
  // Groups 1..count-1 (group 0 is the representative's) with a member on its node.
  std::vector<std::vector<DeviceRef>> groups;
  int node = representative(stage).node;
  for (int64_t i = 1; i < count; ++i) {
    std::vector<DeviceRef> g = (this->*group_of)(i, stage);
    if (std::any_of(g.begin(), g.end(), [&](const DeviceRef& d) { return d.node == node; }))
      groups.push_back(std::move(g));
  }
  return groups;
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_tp_groups(int64_t stage) const
{
  return groups_on_node(stage, dp_, &ParallelLayout::tp_group_of); // tp group d holds ranks (t, d)
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_dp_groups(int64_t stage) const
{
  return groups_on_node(stage, tp_, &ParallelLayout::dp_group_of); // dp group t holds ranks (t, d)
}

std::vector<DeviceRef> ParallelLayout::span_of(int64_t size, int64_t t, int64_t k, int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t i = 0; i < size; ++i)
    g.push_back(device(t, k * size + i, stage));
  return g;
}

std::vector<DeviceRef> ParallelLayout::edp_group_of(int64_t t, int64_t i, int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t k = 0; k < dp_ / ep_; ++k)
    g.push_back(device(t, k * ep_ + i, stage));
  return g;
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_groups(
    int64_t stage, int64_t outer, int64_t inner,
    std::vector<DeviceRef> (ParallelLayout::*group_of)(int64_t, int64_t, int64_t) const) const
{
  std::vector<std::vector<DeviceRef>> groups;
  int node = representative(stage).node;
  for (int64_t t = 0; t < outer; ++t)
    for (int64_t i = 0; i < inner; ++i) {
      if (t == 0 && i == 0)
        continue;
      std::vector<DeviceRef> g = (this->*group_of)(t, i, stage);
      if (std::any_of(g.begin(), g.end(), [&](const DeviceRef& d) { return d.node == node; }))
        groups.push_back(std::move(g));
    }
  return groups;
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_ep_groups(int64_t stage) const
{
  return peer_groups(stage, tp_, dp_ / ep_, &ParallelLayout::ep_group_of);
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_cp_groups(int64_t stage) const
{
  return peer_groups(stage, tp_, dp_ / cp_, &ParallelLayout::cp_group_of);
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_edp_groups(int64_t stage) const
{
  return peer_groups(stage, tp_, ep_, &ParallelLayout::edp_group_of);
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

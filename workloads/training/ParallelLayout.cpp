#include "workloads/training/ParallelLayout.hpp"

#include <algorithm>
#include <map>

namespace memwall {

ParallelLayout::ParallelLayout(const TrainingConfig& cfg, int gpus_per_node)
    : tp_(cfg.tp), pp_(cfg.pp), dp_(cfg.replicas()), ep_(cfg.ep), etp_(cfg.etp), cp_(cfg.cp),
      gpus_per_node_(gpus_per_node)
{}

DeviceRef ParallelLayout::device(int64_t t, int64_t d, int64_t p) const
{
  int64_t rank = t + tp_ * (d + dp_ * p);
  return DeviceRef{DeviceKind::gpu, static_cast<int>(rank / gpus_per_node_), static_cast<int>(rank % gpus_per_node_)};
}

std::vector<DeviceRef> ParallelLayout::ranks(int64_t first, int64_t stride, int64_t count, int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t j = 0; j < count; ++j) {
    int64_t r = first + j * stride;
    g.push_back(device(r % tp_, r / tp_, stage));
  }
  return g;
}

std::vector<DeviceRef> ParallelLayout::tp_group(int64_t stage) const { return ranks(0, 1, tp_, stage); }

std::vector<DeviceRef> ParallelLayout::dp_group(int64_t stage) const { return ranks(0, tp_, dp_, stage); }

std::vector<std::vector<DeviceRef>>
ParallelLayout::on_node(int64_t stage, int64_t count, const std::function<std::vector<DeviceRef>(int64_t)>& group) const
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
  return on_node(stage, dp_, [&](int64_t d) { return ranks(tp_ * d, 1, tp_, stage); }); // tp group d: ranks (t, d)
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_dp_groups(int64_t stage) const
{
  return on_node(stage, tp_, [&](int64_t t) { return ranks(t, tp_, dp_, stage); }); // dp group t: ranks (t, d)
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_spans(int64_t size, int64_t stage) const
{
  // Span i = t * (dp / size) + k holds ranks (t, k size .. k size + size - 1).
  const int64_t spans = dp_ / size;
  return on_node(stage, tp_ * spans,
                 [&](int64_t i) { return ranks(i / spans + tp_ * (i % spans) * size, tp_, size, stage); });
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_etp_groups(int64_t stage) const
{
  // Group i holds ranks i etp .. i etp + etp - 1.
  return on_node(stage, tp_ * dp_ / etp_, [&](int64_t i) { return ranks(i * etp_, 1, etp_, stage); });
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_ep_groups(int64_t stage) const
{
  // Group i = et * edp + k holds ranks et + etp (e + ep k), e < ep (with etp = tp: the
  // span of ep consecutive dp ranks k ep .. of tp index et).
  const int64_t n = edp();
  return on_node(stage, etp_ * n, [&](int64_t i) { return ranks(i / n + etp_ * ep_ * (i % n), etp_, ep_, stage); });
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_edp_groups(int64_t stage) const
{
  // Group i = et * ep + e holds ranks et + etp (e + ep k), k < edp.
  return on_node(stage, etp_ * ep_,
                 [&](int64_t i) { return ranks(i / ep_ + etp_ * (i % ep_), etp_ * ep_, edp(), stage); });
}

namespace {

std::vector<DeviceRef> on_node_of(const std::vector<DeviceRef>& group, int node)
{
  std::vector<DeviceRef> out;
  for (const DeviceRef& d : group)
    if (d.node == node)
      out.push_back(d);
  return out;
}

} // namespace

std::vector<DeviceRef> ParallelLayout::ep_node_group(int64_t stage) const
{
  return on_node_of(ep_group(stage), representative(stage).node);
}

std::vector<std::vector<DeviceRef>> ParallelLayout::peer_ep_node_groups(int64_t stage) const
{
  std::vector<std::vector<DeviceRef>> out;
  for (const auto& g : peer_ep_groups(stage))
    if (auto here = on_node_of(g, representative(stage).node); !here.empty())
      out.push_back(std::move(here));
  return out;
}

int64_t ParallelLayout::ep_nodes() const
{
  std::vector<DeviceRef> g = ep_group(0);
  std::map<int, int64_t> per_node;
  for (const DeviceRef& d : g)
    ++per_node[d.node];
  for (const auto& [node, count] : per_node)
    if (count != per_node.begin()->second)
      return 1;
  return static_cast<int64_t>(per_node.size());
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

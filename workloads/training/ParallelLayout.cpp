#include "ParallelLayout.hpp"

namespace memwall {

ParallelLayout::ParallelLayout(int64_t tp, int64_t pp, int64_t dp, int gpus_per_node)
    : tp_(tp), pp_(pp), dp_(dp), gpus_per_node_(gpus_per_node)
{
}

DeviceRef ParallelLayout::device(int64_t t, int64_t d, int64_t p) const
{
  int64_t rank = t + tp_ * (d + dp_ * p);
  return DeviceRef{DeviceKind::gpu, static_cast<int>(rank / gpus_per_node_), static_cast<int>(rank % gpus_per_node_)};
}

std::vector<DeviceRef> ParallelLayout::tp_group(int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t t = 0; t < tp_; ++t)
    g.push_back(device(t, 0, stage));
  return g;
}

std::vector<DeviceRef> ParallelLayout::dp_group(int64_t stage) const
{
  std::vector<DeviceRef> g;
  for (int64_t d = 0; d < dp_; ++d)
    g.push_back(device(0, d, stage));
  return g;
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

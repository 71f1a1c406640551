#pragma once
// Where the ranks of a tp x pp x dp job sit, in Megatron-LM's order: tensor-parallel
// ranks vary fastest (so a tp group stays inside a node), then data-parallel, then
// pipeline stages:   global rank = t + tp * (d + dp * p),   node = rank / gpus_per_node.
//
// Context parallelism (cp) splits the data-parallel ranks further (Megatron-Core's order
// tp, cp, dp): here `dp` counts all cp x dp replicas of the parameters, and the cp group
// of a rank is `cp` consecutive ones.
//
// Mixture-of-experts layers fold the same ranks differently (Megatron-Core's MoE
// parallel folding, Liu et al. 2025): a stage's ranks r = t + tp d are also
// r = et + etp (e + ep k), expert-tensor rank et, expert-parallel rank e and
// expert-data-parallel rank k. The etp group of a rank is etp consecutive ranks, its ep
// group ep ranks etp apart, and its routed experts' gradients are reduced among the edp
// = tp dp / (etp ep) ranks holding the same expert shard. With etp = tp (the default)
// the ep group is ep consecutive dp ranks of one tp index; with etp = 1 it runs across
// the tp ranks too.
//
// One representative per pipeline stage, (t, d) = (0, 0), stands for the tp x dp
// identical ranks of its stage (symmetric-rank folding). Its peers on the same node
// share that node's PCIe switches, DRAM, NVMe and NICs, so the replay repeats their
// traffic (OpDag::set_shadows); ranks on other nodes load only their own links.
#include "hwmodels/DeviceRef.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace memwall {

class ParallelLayout {
public:
  ParallelLayout(const TrainingConfig& cfg, int gpus_per_node);

  DeviceRef device(int64_t t, int64_t d, int64_t p) const;
  DeviceRef representative(int64_t stage) const { return device(0, 0, stage); }
  std::vector<DeviceRef> tp_group(int64_t stage) const; // of the representative
  std::vector<DeviceRef> dp_group(int64_t stage) const; // of the representative
  // The tp (dp) groups of the representative's node peers other than its own, each once:
  // they run the same collective at the same time on their own ports.
  std::vector<std::vector<DeviceRef>> peer_tp_groups(int64_t stage) const;
  std::vector<std::vector<DeviceRef>> peer_dp_groups(int64_t stage) const;
  // MoE folding: the representative's etp, ep and edp groups, and those of its node peers.
  std::vector<DeviceRef> etp_group(int64_t stage) const { return ranks(0, 1, etp_, stage); }
  std::vector<DeviceRef> ep_group(int64_t stage) const { return ranks(0, etp_, ep_, stage); }
  std::vector<DeviceRef> edp_group(int64_t stage) const { return ranks(0, etp_ * ep_, edp(), stage); }
  std::vector<std::vector<DeviceRef>> peer_etp_groups(int64_t stage) const;
  std::vector<std::vector<DeviceRef>> peer_ep_groups(int64_t stage) const;
  std::vector<std::vector<DeviceRef>> peer_edp_groups(int64_t stage) const;
  int64_t edp() const { return tp_ * dp_ / (etp_ * ep_); }
  // The ep ranks on the representative's node (a two-hop dispatcher's NVLink hop), the
  // same of the node peers' ep groups, and the nodes an ep group spans when it has as
  // many ranks on each (else 1).
  std::vector<DeviceRef> ep_node_group(int64_t stage) const;
  std::vector<std::vector<DeviceRef>> peer_ep_node_groups(int64_t stage) const;
  int64_t ep_nodes() const;
  // Context parallelism: the representative's cp group and those of its node peers.
  std::vector<DeviceRef> cp_group(int64_t stage) const { return ranks(0, tp_, cp_, stage); }
  std::vector<std::vector<DeviceRef>> peer_cp_groups(int64_t stage) const { return peer_spans(cp_, stage); }
  // The other ranks of `stage` on the representative's node.
  std::vector<DeviceRef> node_peers(int64_t stage) const;
  int64_t ranks_per_stage() const { return tp_ * dp_; }

private:
  // Ranks first + j stride of `stage`, j < count, in stage-rank order r = t + tp d: every
  // group is one (a tp group: stride 1; a dp or cp group: stride tp; the MoE groups:
  // strides of etp).
  std::vector<DeviceRef> ranks(int64_t first, int64_t stride, int64_t count, int64_t stage) const;
  // The spans of `size` consecutive dp ranks of every tp index but the representative's.
  std::vector<std::vector<DeviceRef>> peer_spans(int64_t size, int64_t stage) const;
  // Groups 1 .. count-1 of `group` (group 0 is the representative's) with a member on its node.
  std::vector<std::vector<DeviceRef>> on_node(int64_t stage, int64_t count,
                                              const std::function<std::vector<DeviceRef>(int64_t)>& group) const;

  int64_t tp_, pp_, dp_, ep_, etp_, cp_;
  int gpus_per_node_;
};

} // namespace memwall

#pragma once
// The training step being built (TrainingStepGenerator): what the generator's parts
// read (the model, the configuration and its stack, the parallel layout) and what they
// add to (the op DAG, each block's tensors, each stage's groups). A plain struct that
// every part holds by reference, so that a part owns its own state and no part reaches
// into another's; the parts that need another part are handed it when made.
#include "hwmodels/ClusterSpec.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/training/GradBuckets.hpp"
#include "workloads/training/ParallelLayout.hpp"
#include "workloads/training/blocks/BlockKernels.hpp"
#include "workloads/training/config/TrainingConfig.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <array>
#include <memory>
#include <utility>
#include <vector>

namespace memwall {

// One block of the stage's chunks (the embedding, a layer, the head) and its model states.
struct StepBlock {
  BlockPlan plan;
  int stage     = 0;
  int64_t chunk = 0;
  Tensor weights;                  // this rank's weights (its shard under ZeRO-3), where they are placed
  Tensor states;                   // this rank's optimizer states, where they are placed
  Tensor grads;                    // on the GPU: full (ZeRO-0/1) or this rank's shard (ZeRO-2/3)
  Tensor host_grads;               // ZeRO-Offload: fp32 gradient shard in host DRAM
  Tensor bucket;                   // ZeRO-2/3: this micro-batch's full gradient before reduce-scatter
  Tensor accumulated;              // ZeRO-3 accumulating unsharded: the full gradient summed over micro-batches
  int64_t forwards  = 0;           // forward passes emitted so far
  int64_t backwards = 0;           // backward passes emitted so far
  OpId grads_ready  = OpDag::none; // last op before the optimizer may read the gradients
};

// One pipeline stage's representative GPU, its memories and its groups.
struct StepStage {
  DeviceRef gpu, host, nvme;
  int32_t tp_group = -1, dp_group = -1;
  int32_t ep_group      = -1;                     // expert parallelism
  int32_t ep_node_group = -1;                     // the ep ranks on the node (a two-hop dispatcher's NVLink hop)
  int32_t etp_group     = -1;                     // expert tensor parallelism (the tp group when etp = tp)
  int32_t cp_group      = -1;                     // context parallelism
  int shadows_on_socket = 1, shadows_on_node = 1; // ranks sharing the host's DRAM / the node's NVMe
  std::vector<std::vector<int>> chunks;           // block indices per chunk, forward order
  // Where gradients are reduced and updated weights gathered: [0] the dense ones over
  // the dp group, [1] routed experts' over the edp group (-1: none to reduce with).
  std::array<int32_t, 2> reduce_groups{-1, -1};
  std::vector<GradBucket> buckets; // DDP / ZeRO-1: the gradient buckets (grad_buckets)
};

// (block or virtual stage, micro-batch) packed into one key: looked up a few times per
// pass (65,536 passes in Megatron 1T's step), never walked in order.
inline uint64_t slot_key(int64_t a, int64_t micro_batch)
{
  return (static_cast<uint64_t>(a) << 40) | static_cast<uint64_t>(micro_batch);
}

struct StepBuild {
  StepBuild(const ModelSpec& model, const TrainingConfig& cfg, const ClusterSpec& cluster);

  ModelSpec model;
  TrainingConfig cfg;
  std::shared_ptr<const TrainingStack> stack; // cfg.stack: what the blocks launch, keep and hold
  ModelStateBytes state_bytes;
  ClusterSpec cluster;
  ParallelLayout layout;
  StepShape shape;
  OpDag dag;
  std::vector<StepBlock> blocks;
  std::vector<StepStage> stages;

  StepStage& stage_of(int b) { return stages[blocks[b].stage]; }
  const StepStage& stage_of(int b) const { return stages[blocks[b].stage]; }
  double shard(double params) const; // optimizer (and ZeRO-2/3 gradient) shard of a tp rank's params
  // The same for a quantity `full` in proportion to block b's parameters: routed
  // experts' part sharded over the edp group (dp / ep ranks), the rest over dp.
  double shard(int b, double full) const;
  // `full` split in proportion to block b's dense and routed-expert parameters (all
  // dense without expert parallelism, where the edp group is the dp group).
  std::pair<double, double> dense_and_experts(int b, double full) const;
  // Ranks whose share of a host (or NVMe) pool the stage's representative allocates.
  double host_share(const StepStage& s, bool nvme) const;
  DeviceRef state_pool(const StepStage& s, OffloadTarget t) const;
  // ZeRO-3: bytes of a gathered (unsharded) parameter (ModelStateBytes::gathered).
  double gathered_bytes_per_param() const
  {
    return state_bytes.gathered > 0 ? state_bytes.gathered : state_bytes.weights;
  }
  StreamKind zero_stream(StreamKind own) const; // the compute stream when the stack runs ZeRO's collectives serially
  // ZeRO-1 under Megatron's overlap_param_gather: updated weights all-gathered ahead of
  // the next step's first forward (ParamGather), not after the optimizer step.
  bool weights_gathered_in_forward() const { return cfg.zero == 1 && stack->gathers_weights_in_forward(); }
};

} // namespace memwall

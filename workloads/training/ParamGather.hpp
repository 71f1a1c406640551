#pragma once
// ZeRO-3 / FSDP parameter gathers. Every use of a block (its forward, or its backward,
// in each micro-batch) needs the block's full parameters, less those the stack holds
// whole on every rank (TrainingStack::persistent_elements): the stack plans which use
// all-gathers them into a buffer of its own, at which earlier use the gather is issued
// (prefetch), whose free it waits for (so at most so many buffers are alive) and after
// which use the buffer is freed (TrainingStack::plan_gathers; FSDP2's in FsdpStack.cpp).
// This class emits that plan as told: the buffer allocated on the gather stream and
// all-gathered from the dp shards (after an NVMe -> host -> GPU fetch of this rank's
// shard under ZeRO-Infinity), or tensor by tensor where the blocks list their tensors
// (TrainingStack::plan_fetches, DeepSpeed's), and freed on the compute stream.
// ZeRO-1 under Megatron's overlap_param_gather: the previous step's updated weights come
// back bucket by bucket (the gradient buckets, GradBuckets.hpp) in forward order: the
// first bucket's all-gather issued as the step begins (zero_grad), each next one when
// the forward reaches the bucket before it (its pre-hook waits for that bucket's and
// issues the next, behind the compute issued so far), and a block's first forward waits
// for its bucket's. Dense and routed experts' buckets are two chains. In place: no buffer.
#include "workloads/training/StepBuild.hpp"
#include "workloads/training/TensorCollectives.hpp"

#include <array>
#include <vector>

namespace memwall {

class ParamGather {
public:
  ParamGather(StepBuild& step, TensorCollectives& calls) : step_(step), calls_(calls) {}

  // Elements of block b held whole on every rank (never gathered; 0 but under ZeRO-3).
  double persistent_params(int b) const;
  // The step's uses in the schedule's order, and the stack's plan for them.
  void plan();
  // Block b's next use begins: issues the gathers planned for it and returns the op its
  // kernels wait for (none: nothing gathered).
  OpId gathered(int b);
  // Block b's use ends: frees the buffers planned to be freed after it.
  void release(int b);
  // The gathered copy block b's current use reads (unified memory's touches).
  Tensor in_use(int b) const;

private:
  struct Buffer {
    Tensor buffer;
    OpId ready = OpDag::none;
    OpId freed = OpDag::none;
  };
  // overlap_param_gather: the chains of buckets; each chain's first all-gather.
  void plan_updated_weights();
  void issue_updated(int stage, size_t lane); // the chain's next all-gather
  OpId updated_weights(int b);                // block b's first forward: what it waits for
  // ZeRO-3: one pipeline stage's uses (the blocks of its chunks in the order its
  // schedule runs them over the whole step) and the stack's plan for them; stages are
  // emitted interleaved (PipelineSlots), each follows its own.
  struct StageUses {
    std::vector<ParamUse> uses;
    GatherPlan plan;   // per use, the stack's
    FetchPlan fetches; // per use, the tensors it gathers (blocks that list them)
    std::vector<Buffer> buffers;
    std::vector<size_t> held; // uses whose buffers are alive, in the order gathered
    size_t next_use = 0;      // the use running (between gathered and release)
    size_t issued   = 0;      // uses whose gathers have been issued
  };
  void check_plan(const StageUses& u) const; // a plan the emission order can follow, else a logic error
  void emit(StageUses& u, size_t use);       // use's all-gather into a buffer of its own
  OpId gather_tensors(const StageUses& u, const StepStage& s, size_t use, OpId after);

  StepBuild& step_;
  TensorCollectives& calls_;
  std::vector<StageUses> stage_uses_; // per pipeline stage (ZeRO-3)
  // ZeRO-1, overlap_param_gather: per stage and lane (dense, experts), the buckets in
  // forward order and the all-gathers issued so far.
  struct Chain {
    static constexpr size_t none = static_cast<size_t>(-1);
    std::vector<const GradBucket*> buckets; // into StepStage::buckets
    std::vector<OpId> issued;
    std::vector<uint64_t> sequence; // when each was issued, over both chains
  };
  std::vector<std::array<Chain, 2>> chains_;
  std::vector<std::array<size_t, 2>> in_chain_; // per block and lane: its bucket's index, none once it waited
  uint64_t issued_updates_ = 0;
};

} // namespace memwall

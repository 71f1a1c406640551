#pragma once
// DDP's and the distributed optimizer's gradient buckets (ZeRO-0/1) of one pipeline
// stage: which blocks' gradients are reduced together, in the order backward fills them.
// A bucket never spans two model chunks (Megatron-Core wraps each chunk in a DDP of its
// own) nor splits a block; it closes once it holds training.bucket_bytes, or when its
// chunk's backward is done. A chunk the stack does not bucket (TrainingStack::
// buckets_gradients: Megatron-Core's other than pipeline rank 0's first) is one bucket.
// Dense gradients and routed experts' are bucketed apart (StepStage::reduce_groups).
// The same buckets carry the updated weights back under Megatron's overlap_param_gather.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memwall {

struct StepBuild;

struct GradBucket {
  size_t lane   = 0; // 0: dense gradients, 1: routed experts'
  int64_t chunk = 0;
  int index     = 0;       // per lane, in the order backward closes them
  double bytes  = 0;       // gradient bytes of the lane's part of its blocks
  std::vector<int> blocks; // in backward order: the last one closes the bucket
};

// Stage `stage`'s buckets in the order the last micro-batch's backward closes them
// (the last chunk first); planned once a step, kept as StepStage::buckets.
std::vector<GradBucket> grad_buckets(const StepBuild& step, int stage);

// "stage2.zero1.expert_bucket3": the bucket's name, its collectives' prefix.
std::string bucket_name(const StepBuild& step, int stage, const GradBucket& bucket);

} // namespace memwall

#pragma once
// Gradients of a training step: where they live and how the data-parallel replicas
// reduce them.
//   ZeRO-0  full gradients; DDP buckets all-reduced in the last micro-batch (no_sync before);
//   ZeRO-1  full gradients; buckets reduce-scattered in the last micro-batch;
//   ZeRO-2/3 only this rank's shard is kept: each micro-batch's block gradient is built
//           in a workspace bucket, reduce-scattered into the shard and freed (DeepSpeed's
//           ipg buckets), here one bucket per block; a stack whose blocks list their
//           tensors reduces them as it issues them (TensorCollectives). A stack that
//           accumulates unsharded (FSDP2 under a pipeline) sums each micro-batch's
//           gradient into a full buffer and reduce-scatters it once, as its model
//           chunk's last backward ends.
// With the optimizer offloaded the reduced shard goes D2H into fp32 host gradients.
// Under expert parallelism the routed experts' gradients are reduced apart, among the
// dp / ep ranks that hold the same experts (Megatron-Core's expert-data-parallel group).
#include "workloads/training/StepBuild.hpp"
#include "workloads/training/TensorCollectives.hpp"

#include <deque>
#include <tuple>
#include <utility>
#include <vector>

namespace memwall {

class GradientSync {
public:
  GradientSync(StepBuild& step, TensorCollectives& calls);

  // DDP's flat buckets beside the gradients (TrainingStack::ddp_copies_gradients).
  bool ddp_bucket_copies() const;
  // Before block b's backward: its gradients (first micro-batch) and ZeRO-2/3's bucket.
  void alloc_gradients(int b);
  // After block b's backward of micro-batch mb: what is reduced then.
  void reduce_gradients(int b, int64_t mb);
  // When backward ends: the buckets that waited for it, DDP's copies back.
  void flush_buckets();
  // Before a pass of `stage`: the compute stream waits for the reduce-scatters it must.
  void settle(int stage);

private:
  struct StageBuckets {
    std::vector<size_t> deferred; // StepStage::buckets waiting for the end of backward (overlap_grad_reduce off)
    std::deque<OpId> in_flight;   // ZeRO-2/3: frees of the buckets still reducing
    // FSDP2 under a pipeline: the reduce-scatters of a chunk the compute stream waits for
    // from this stage's next pass (block, its reduce-scatter).
    std::vector<std::pair<int, OpId>> awaited;
    // DDP's copies back from its buckets, made when backward ends: (all-reduce, bytes, blocks).
    std::vector<std::tuple<OpId, double, std::vector<int>>> copy_back;
  };
  void emit_bucket(int stage, const GradBucket& bucket, OpId after);
  OpId reduce_tensors(int b, int64_t mb, OpId after); // per-parameter or per-bucket reduce-scatters; returns the last
  bool accumulates_unsharded() const;                 // ZeRO-3, the stack's FSDP2 under a pipeline
  void accumulate(int b, int64_t mb);                 // FSDP2 under a pipeline: micro-batch mb's gradient summed in
  void reduce_chunk(int b); // after block b's backward: its chunk's reduce-scatters, once its last is done

  StepBuild& step_;
  TensorCollectives& calls_;
  std::vector<StageBuckets> stages_;
  std::vector<std::vector<size_t>> closes_; // per block: the buckets of its stage its gradient completes
};

} // namespace memwall

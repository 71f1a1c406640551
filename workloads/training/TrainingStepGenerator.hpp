#pragma once
// Builds the op DAG of one training step on one data-parallel replica (the
// representative of all dp replicas, which are identical): model states allocated at
// the start, forward and backward of every micro-batch with saved activations alive
// from a kernel's forward to its backward, DDP gradient buckets all-reduced on the comm
// stream as the last backward produces them, then the optimizer step.
//
// Extension points for tensor/pipeline parallelism and ZeRO: blocks (BlockKernels),
// the per-block emitters below, and where model states live (state_bytes_per_param).
#include "BlockKernels.hpp"
#include "ClusterSpec.hpp"
#include "OpDag.hpp"
#include "TrainingConfig.hpp"

namespace memwall {

class TrainingStepGenerator {
public:
  TrainingStepGenerator(const ModelSpec& model, const TrainingConfig& cfg, const ClusterSpec& cluster);
  OpDag generate();

  // Bytes per parameter of each model state, as ZeRO counts them (K = 12 for mixed Adam).
  double weight_bytes_per_param() const;
  double gradient_bytes_per_param() const;
  double optimizer_bytes_per_param() const;

private:
  struct BlockState {
    BlockPlan plan;
    Tensor grads;
    std::vector<Tensor> saved; // per kernel, current micro-batch
    OpId last_backward = OpDag::none;
  };

  void emit_setup();
  void emit_forward(BlockState& b);
  void emit_backward(BlockState& b, int mb);
  void emit_bucket(double bytes, OpId after, int index);
  void emit_optimizer();
  OpId kernel(const std::string& name, KernelClass kclass, Dtype dtype, double flops, double model_flops,
              double bytes);

  ModelSpec model_;
  TrainingConfig cfg_;
  ClusterSpec cluster_;
  DeviceRef gpu_; // the representative replica
  OpDag dag_;
  std::vector<BlockState> blocks_;
  int32_t dp_group_ = -1;
  double pending_bucket_ = 0;
  std::vector<double> buckets_; // sizes of the full buckets, in launch order
};

} // namespace memwall

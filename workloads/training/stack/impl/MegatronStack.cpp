// `megatron`: Megatron-LM (Core) as its papers and code run a step. Fused kernels
// (BlockKernels.cpp, EdgeBlocks.cpp: bias-dropout-add, fused softmax or flash attention,
// vocabulary-parallel cross-entropy in fp32); weights in the compute precision with fp32
// master weights in the optimizer (Adam: ZeRO's K = 12, 16 bytes per parameter with
// 16-bit weights and gradients); the optimizer's separate passes over each block.
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

class MegatronStack : public TrainingStack {
public:
  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override { return embedding_block(m, s); }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    return transformer_layer_block(m, s, l);
  }
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override { return head_block(m, s); }

  // Replicated model states (DDP) or the distributed optimizer (--use-distributed-optimizer:
  // optimizer states and fp32 master weights sharded over the data-parallel ranks, ZeRO-1).
  std::vector<int> zero_stages() const override { return {0, 1}; }
  ModelStateBytes state_bytes(const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    return master_weight_state_bytes(cfg, m);
  }

  std::vector<OptimizerPass> optimizer_passes(const TrainingConfig& cfg, const ModelStateBytes& b) const override
  {
    // Megatron-LM's mixed-precision step, each pass its own kernel over this rank's shard:
    //   fp16 only: unscale the gradients and check them for inf/NaN (read, write);
    //   gradient norm for clipping (read);
    //   the fused Adam (read gradient, master weights and states; write master and
    //     states): g + 12 + 12 B per parameter for Adam; without mixed precision the
    //     states hold no master copy, so the weights are read and written too;
    //   copy the master weights into the compute weights (read 4, write 2);
    //   zero the gradient buffer for the next step (write).
    const double g = b.gradients;
    std::vector<OptimizerPass> p;
    if (cfg.precision == Dtype::fp16)
      p.push_back({"unscale_grads", 2, 2 * g, true, false, false});
    p.push_back({"grad_norm", 2, g, true, false, false});
    double weights = cfg.mixed_precision() ? 0.0 : 2 * b.weights;
    p.push_back({"optimizer_step", optimizer_flops_per_param(cfg.optimizer), g + 2 * b.optimizer + weights, true, true,
                 !cfg.mixed_precision()});
    if (cfg.mixed_precision())
      p.push_back({"copy_to_weights", 1, 4 + b.weights, false, true, true});
    p.push_back({"zero_grad_fill", 0, g, true, false, false});
    return p;
  }
};

const bool registered = training_stack_registry().add(
    "megatron",
    "Megatron-LM: fused kernels, tp/sp/pp/cp/ep, bf16 weights with fp32 master weights and Adam states (16 B per "
    "parameter), a separate pass per optimizer step",
    [](ParamReader&) { return std::make_unique<MegatronStack>(); });

} // namespace
} // namespace memwall

// `megatron`: Megatron-LM (Core) as its papers and code run a step. Fused kernels
// (BlockKernels.cpp, EdgeBlocks.cpp: bias-dropout-add, fused softmax or flash attention,
// vocabulary-parallel cross-entropy in fp32); weights in the compute precision with fp32
// master weights in the optimizer (Adam: ZeRO's K = 12, 16 bytes per parameter with
// 16-bit weights and gradients); the optimizer's separate passes over each block.
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

// Megatron-Core's own knobs, by its names (the `megatron` section).
struct MegatronKnobs {
  bool tp_comm_overlap = false;
};

MegatronKnobs read_knobs(ParamReader& training)
{
  MegatronKnobs k;
  ParamReader r     = training.section("megatron", "Megatron-Core's settings, by its names (training.stack megatron)");
  k.tp_comm_overlap = r.flag("tp_comm_overlap", false,
                             "--tp-comm-overlap: with sequence parallelism, Transformer Engine's userbuffers hide "
                             "the tp all-gathers and reduce-scatters behind the layers' GEMMs (TE's default "
                             "methods: ring exchange for all-gathers, pipelined reduce-scatter after the "
                             "row-parallel GEMMs, bulk overlap in the column-parallel backward)");
  r.finish();
  return k;
}

// --tp-comm-overlap as Transformer Engine sets it up by default (initialize_ub, TE v2.2
// base.py): the all-gather before a column-parallel GEMM (qkv_fprop, fc1_fprop) and of
// the output gradient before a row-parallel input gradient (proj_dgrad, fc2_dgrad) by ring
// exchange; the reduce-scatter after a row-parallel GEMM (proj_fprop, fc2_fprop)
// pipelined in 4 chunks; in a column-parallel backward the input's all-gather and the
// input gradient's reduce-scatter in bulk (qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad).
// The output layer is Megatron's own linear, not TE's: not overlapped. TE's defaults
// (get_default_config): ring exchange on copy engines with 1 SM and no margin; pipeline
// and bulk with 16 SMs and set_sm_margin, so the GEMM beside them runs on the rest.
void overlap_tp_comms(BlockPlan& b)
{
  for (KernelPlan& k : b.kernels) {
    bool row = k.fwd_after.group == CommGroup::tp && k.fwd_after.kind == CollectiveKind::reduce_scatter;
    if (k.fwd_after.group == CommGroup::tp && k.fwd_after.kind == CollectiveKind::all_gather)
      k.fwd_after.overlap = TpOverlap::ring_exchange;
    if (row) {
      k.fwd_after.overlap  = TpOverlap::pipeline;
      k.fwd_after.splits   = 4;
      k.fwd_after.comm_sms = 16;
    }
    if (k.bwd_before.group == CommGroup::tp && k.bwd_before.kind == CollectiveKind::all_gather) {
      k.bwd_before.overlap  = row ? TpOverlap::ring_exchange : TpOverlap::bulk;
      k.bwd_before.comm_sms = row ? 0 : 16;
    }
    if (k.bwd_after.group == CommGroup::tp && k.bwd_after.kind == CollectiveKind::reduce_scatter) {
      k.bwd_after.overlap  = TpOverlap::bulk;
      k.bwd_after.comm_sms = 16;
    }
  }
}

class MegatronStack : public TrainingStack {
public:
  explicit MegatronStack(ParamReader& training) : k_(read_knobs(training)) {}

  void check(ParamReader& r, const TrainingConfig& cfg, const ModelSpec&) const override
  {
    // arguments.py: "Tensor parallel communication/GEMM overlap can happen only when
    // sequence parallelism is enabled".
    if (k_.tp_comm_overlap && cfg.tp > 1 && !cfg.sp)
      r.fail("sp", "training.megatron.tp_comm_overlap needs sequence parallelism (sp: true), as Megatron-LM "
                   "asserts");
  }

  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override { return embedding_block(m, s); }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    BlockPlan b = transformer_layer_block(m, s, l);
    if (k_.tp_comm_overlap && s.tp > 1 && s.sp) // NeMo and TE run it only with sequence parallelism
      overlap_tp_comms(b);
    return b;
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

private:
  MegatronKnobs k_;
};

const bool registered = training_stack_registry().add(
    "megatron",
    "Megatron-LM: fused kernels, tp/sp/pp/cp/ep, bf16 weights with fp32 master weights and Adam states (16 B per "
    "parameter), a separate pass per optimizer step",
    [](ParamReader& training) { return std::make_unique<MegatronStack>(training); });

} // namespace
} // namespace memwall

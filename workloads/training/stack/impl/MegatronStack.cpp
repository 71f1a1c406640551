// `megatron`: Megatron-LM (Core) as its papers and code run a step. Fused kernels
// (BlockKernels.cpp, EdgeBlocks.cpp: bias-dropout-add, fused softmax or flash attention,
// vocabulary-parallel cross-entropy in fp32); weights in the compute precision with fp32
// master weights in the optimizer (Adam: ZeRO's K = 12), gradients in an fp32 main-grad
// buffer under bf16 (18 bytes per parameter; 16 with fp16); the optimizer's separate
// passes over each block; Megatron-Core's DDP buckets and the distributed optimizer's
// overlaps (the `megatron` section).
#include "workloads/training/blocks/TeFp8Linears.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace memwall {
namespace {

// Megatron-Core's own knobs, by its names (the `megatron` section).
struct MegatronKnobs {
  bool tp_comm_overlap      = false;
  bool overlap_param_gather = false;
  bool apex_optimizer       = false; // NeMo 1.x's optim.name distributed_fused_adam
  std::optional<bool> grad_reduce_in_fp32;
  // Megatron-LM's arguments.py: "bfloat16 requires gradient accumulation and all-reduce
  // to be done in fp32" (accumulate_allreduce_grads_in_fp32 forced on); fp16 keeps them
  // in fp16 unless asked. That buffer is Megatron's DDP's (ZeRO-0/1): ZeRO-2/3 and
  // ZeRO-Offload are DeepSpeed's engine, whose gradients stay in the compute precision.
  static bool own_ddp(const TrainingConfig& cfg)
  {
    return cfg.zero <= 1 && cfg.offload_optimizer == OffloadTarget::none;
  }
  bool fp32_grads(const TrainingConfig& cfg) const
  {
    return grad_reduce_in_fp32.value_or(own_ddp(cfg) && cfg.precision != Dtype::fp16);
  }
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
  k.overlap_param_gather = r.flag("overlap_param_gather", false,
                                  "--overlap-param-gather: the distributed optimizer's updated weights are "
                                  "all-gathered bucket by bucket during the next step's first forward, each "
                                  "bucket's before its layers run, instead of after the optimizer step");
  k.apex_optimizer       = r.choice("distributed_optimizer", "mcore", {"mcore", "apex"},
                                    "mcore: Megatron-Core's DistributedOptimizer over its DDP's buckets (only pipeline "
                                          "rank 0's first model chunk bucketed); apex: Apex's DistributedFusedAdam, NeMo 1.x's "
                                          "optim.name distributed_fused_adam (a bucket per layer in every chunk)") == "apex";
  k.grad_reduce_in_fp32 =
      r.flag_or_unset("grad_reduce_in_fp32", "true unless precision fp16 (arguments.py), zero 2-3 or offload",
                      "--accumulate-allreduce-grads-in-fp32: gradients accumulated in an fp32 "
                      "main-grad buffer and reduced in fp32 (4 bytes per parameter)");
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

  // Megatron's LoRA (BlockKernels.cpp) on any dense model.
  bool runs_lora(const ModelSpec& m) const override { return !m.moe.enabled(); }

  void check(ParamReader& r, const TrainingConfig& cfg, const ModelSpec&) const override
  {
    // arguments.py: "Tensor parallel communication/GEMM overlap can happen only when
    // sequence parallelism is enabled".
    if (k_.tp_comm_overlap && cfg.tp > 1 && !cfg.sp)
      r.fail("sp", "training.megatron.tp_comm_overlap needs sequence parallelism (sp: true), as Megatron-LM "
                   "asserts");
    // arguments.py: "--overlap-param-gather only supported with distributed optimizer",
    // "--overlap-grad-reduce should be turned on when using --overlap-param-gather".
    if (k_.overlap_param_gather && cfg.zero != 1)
      r.fail("zero", "training.megatron.overlap_param_gather needs the distributed optimizer (zero: 1), as "
                     "Megatron-LM asserts");
    if (cfg.precision == Dtype::fp8 && cfg.lora.enabled)
      r.fail("lora", "LoRA with precision fp8 is not modelled (Transformer Engine's FP8 around frozen and adapted "
                     "GEMMs); use bf16");
    if (k_.apex_optimizer && cfg.zero != 1)
      r.fail("zero", "training.megatron.distributed_optimizer apex is a distributed optimizer (zero: 1)");
    if (k_.overlap_param_gather && !cfg.overlap_grad_reduce)
      r.fail("overlap_grad_reduce", "training.megatron.overlap_param_gather needs overlap_grad_reduce: true, as "
                                    "Megatron-LM asserts");
  }

  // Megatron-Core's DDP (distributed_data_parallel.py): buckets of max(40M, 1M x dp)
  // parameters "to ensure that chunks used in NCCL ring-reduce implementations are large
  // enough to remain bandwidth-bound".
  // Apex's DistributedFusedAdam under NeMo (megatron_gpt_model.py r2.0.0rc1): a bucket per
  // transformer layer, split at bucket_cap_mb (not modelled: a block is one bucket here).
  void adjust(const ParamReader& r, TrainingConfig& cfg) const override
  {
    // distributed_data_parallel.py: "Set bucket_size to infinity if overlap_grad_reduce is False".
    if (MegatronKnobs::own_ddp(cfg) && !cfg.overlap_grad_reduce)
      cfg.bucket_bytes = std::numeric_limits<double>::infinity();
    else if (!r.has("bucket_bytes") && MegatronKnobs::own_ddp(cfg))
      cfg.bucket_bytes = k_.apex_optimizer
                             ? 1.0
                             : std::max(40e6, 1e6 * static_cast<double>(cfg.dp)) * (k_.fp32_grads(cfg) ? 4.0 : 2.0);
  }
  // Only pipeline rank 0's first model chunk is bucketed: the DDP of a later stage ("not
  // on the critical path") and of a chunk past the first (training.py's get_model:
  // disable_bucketing=(model_chunk_idx > 0)) reduce all its gradients in one bucket.
  // Apex buckets every chunk.
  bool buckets_gradients(int stage, int64_t chunk) const override
  {
    return k_.apex_optimizer || (stage == 0 && chunk == 0);
  }
  bool gathers_weights_in_forward() const override { return k_.overlap_param_gather; }

  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override { return embedding_block(m, s); }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    BlockPlan b = transformer_layer_block(m, s, l);
    if (s.gemm_dtype == Dtype::fp8) // Transformer Engine's Linear modules
      te_fp8_linears(b, s);
    if (k_.tp_comm_overlap && s.tp > 1 && s.sp) // NeMo and TE run it only with sequence parallelism
      overlap_tp_comms(b);
    return b;
  }
  // The output layer is Megatron's own ColumnParallelLinear, not a TE module: BF16 under
  // FP8 training (te-fp8.md section 4.1).
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override
  {
    BlockPlan b = head_block(m, s);
    for (KernelPlan& k : b.kernels)
      if (k.kclass == KernelClass::gemm && k.dtype == Dtype::fp8)
        k.dtype = Dtype::bf16;
    return b;
  }

  // Replicated model states (DDP) or the distributed optimizer (--use-distributed-optimizer:
  // optimizer states and fp32 master weights sharded over the data-parallel ranks, ZeRO-1).
  std::vector<int> zero_stages() const override { return {0, 1}; }
  ModelStateBytes state_bytes(const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    ModelStateBytes b = master_weight_state_bytes(cfg, m);
    if (k_.fp32_grads(cfg))
      b.gradients = 4;
    return b;
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
    "Megatron-LM: fused kernels, tp/sp/pp/cp/ep, bf16 weights, fp32 main gradients, fp32 master weights and Adam "
    "states (18 B per parameter, 16 with fp16), a separate pass per optimizer step, Megatron-Core's DDP buckets and "
    "overlaps (the `megatron` section, Megatron-Core's knobs)",
    [](ParamReader& training) { return std::make_unique<MegatronStack>(training); });

} // namespace
} // namespace memwall

#pragma once
// The kernels of the blocks a training step is made of (embedding, transformer layer,
// head) as seen by one tensor-parallel rank: forward and backward FLOPs and HBM bytes,
// the activation bytes each kernel saves for backward, and the tensor-parallel
// collectives between kernels (Megatron-LM: column-split QKV and MLP-up, row-split
// projection and MLP-down).
//
// Saved tensors follow Korthikanti et al. 2022, §4: with 16-bit activations, flash
// off and dropout on, a layer saves sbh(10 + 24/t + 5as/(ht)) bytes per rank under
// tensor parallelism, sbh(34/t + 5as/(ht)) with sequence parallelism; each term below
// is named after the tensor it stores.
#include "workloads/dag/Op.hpp"
#include "workloads/model/ModelSpec.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

#include <memory>
#include <string>
#include <vector>

namespace memwall {

// A collective between kernels on the compute stream among the tp group, the ep group
// (an MoE layer's all-to-alls), the cp group (context parallelism's K and V), the etp
// group (the ranks sharing a routed expert's slices) or the ep ranks of the rank's node
// (a two-hop dispatcher's NVLink hop); bytes == 0 means none.
enum class CommGroup : uint8_t { tp, ep, cp, etp, ep_node };
// How a tp all-gather or reduce-scatter hides behind a GEMM (Transformer Engine's
// userbuffers under Megatron-Core's --tp-comm-overlap; calibration/research/
// megatron-core-overlaps.md section 1): none, on the compute stream between kernels;
// ring_exchange, the gathered GEMM split into tp chunks, each run while the next chunk
// comes from the ring neighbour (an all-gather before its forward, or of the output
// gradient before its input-gradient GEMM); pipeline, the GEMM split into `splits`
// chunks, each chunk's reduce-scatter run while the next chunk computes (after a forward);
// bulk, the whole collective beside the other backward GEMM of the same layer (the input
// all-gather beside the input-gradient GEMM, the input gradient's reduce-scatter beside
// the weight-gradient GEMM).
enum class TpOverlap : uint8_t { none, ring_exchange, pipeline, bulk };
struct TpComm {
  CollectiveKind kind = CollectiveKind::all_reduce;
  double bytes        = 0;
  CommGroup group     = CommGroup::tp;
  TpOverlap overlap   = TpOverlap::none;
  int splits          = 1; // pipeline: GEMM chunks
  // SMs its communication kernels take from the GEMM beside it (TE's num_sm under
  // set_sm_margin: the GEMM runs on the others); 0: copy engines, none taken.
  int comm_sms = 0;
};

struct KernelPlan {
  std::string name;
  KernelClass kclass         = KernelClass::gemm;
  KernelFamily family        = KernelFamily::generic; // elementwise: which fitted curve times it
  Dtype dtype                = Dtype::bf16;
  double fwd_flops           = 0;
  double fwd_bytes           = 0;
  double bwd_flops           = 0;
  double bwd_model_flops     = 0; // part of bwd_flops counted as model FLOPs
  double bwd_bytes           = 0;
  double saved_bytes         = 0;                        // activations kept from this kernel's forward to its backward
  MemCategory saved_category = MemCategory::activations; // weights: autocast's casts of the weights
  GemmShape shape;                                       // gemm: the forward GEMM (tokens x out, contracted over in)
  GemmPass bwd_pass = GemmPass::backward; // gemm: its backward's GEMMs (frozen weights: input gradient only)
  bool selective    = false;              // recomputed in backward under selective recompute (attention core)
  // Under selective recompute: what is held from forward to backward, and what the
  // block's recompute in backward brings back of saved_bytes; -1: Megatron's (a
  // recomputed kernel keeps nothing and gets its saved_bytes back, the others keep
  // theirs). A per-op policy keeps some kernels' outputs instead (torchtitan's: the
  // matmuls' and attention's) and recomputes everything else.
  // (SavedActivations reads them.)
  double selective_kept        = -1;
  double selective_regenerated = -1;
  // Adds a micro-batch's weight gradient into the one earlier micro-batches of the step
  // left (autograd's AccumulateGrad): runs from the second micro-batch's backward on.
  bool accumulates = false;
  // Runs forward only in the step's first micro-batch, and not when recomputed
  // (Transformer Engine's FP8 weight casts, cached for the step's other micro-batches).
  bool first_micro_batch_only = false;
  // An eager op's entries (EagerOps): the index of its first in the block (-1: an entry of
  // its own), and whether the op saves nothing a checkpoint packs though it keeps what it
  // needs (bitsandbytes' MatMul4Bit: ctx attributes, not saved tensors).
  int op_first       = -1;
  bool packs_nothing = false;
  // Bytes its forward allocates that live until the model's forward returns, held by
  // nothing autograd keeps (transformers' DynamicCache in training: fp32 copies of k and v):
  // freed when the model's forward (the GPU's part of it) has run its last block.
  double forward_held_bytes = 0;
  // Bytes of a forward output nothing keeps, read by the next kernel that runs forward
  // alone: alive until that kernel has run (transformers 4.4x's bf16 logits, cast to fp32
  // and dropped).
  double out_bytes = 0;
  // Bytes of the input gradient this kernel's backward writes, alive until the backward of
  // kernel `grad_until` (the op before it in forward order, which reads it) has run: how
  // a chain of ops' gradients come and go (the loss's), where a block's workspace would
  // hold them all at once.
  double grad_bytes = 0;
  int grad_until    = -1;
  // For an eager host (TrainingStack::eager_host): the host waits for the GPU's queue to
  // drain before launching this kernel forward (backward): a blocking copy to the host
  // first (ATen's grouped_mm fallback reading its group offsets); and the kernel is
  // launched from a C++ loop inside an op the host is already in (no Python module or
  // autograd node between launches: EagerHost::loop_s_per_kernel).
  bool host_sync_forward  = false;
  bool host_sync_backward = false;
  bool host_loop          = false;
  TpComm fwd_after; // after the forward kernel
  TpComm bwd_before, bwd_after;
  // Whether the kernel has work in forward (backward); a gradient sum runs only in
  // backward, a cast's forward only in forward.
  bool runs(bool forward) const { return forward ? fwd_flops > 0 || fwd_bytes > 0 : bwd_flops > 0 || bwd_bytes > 0; }
};

struct BlockPlan {
  std::string name;             // "embed", "L0", ..., "head"
  bool layer           = false; // a transformer layer: what recompute applies to
  bool keeps_all       = false; // a layer full recompute leaves alone (Megatron's block method past N)
  double params        = 0;     // trainable parameters held by one tp rank
  double frozen_params = 0;     // frozen (LoRA base) parameters held by one tp rank
  double frozen_bytes  = 0;     // their bytes where the stack stores them at several widths; 0: x StepShape's
  // The optimizer states of params where the stack keeps this block's at another width than
  // the rest (the Trainer's 32-bit states for nn.Embedding under an 8-bit AdamW); 0: params
  // x ModelStateBytes::optimizer.
  double optimizer_bytes = 0;
  double expert_params   = 0;      // part of params in this rank's routed experts: reduced over the edp group
  std::vector<KernelPlan> kernels; // forward order
  double backward_workspace = 0;   // activation gradients alive during the block's backward
  // The kernel whose backward makes the block's first weight gradient (AccumulateGrad
  // allocates .grad then): the block's gradients come then, after the kernels before it
  // (the loss's) have come and gone; -1: as the block's backward starts.
  int grads_at       = -1;
  double input_bytes = 0; // the block's input: what full recompute keeps, what a stage sends
  // torch.utils.checkpoint around an eager layer (full recompute): kernels from
  // checkpoint_stop on are not rerun (non-reentrant's early stop, once the recompute has
  // repacked every saved tensor; -1: all are), and checkpoint_output bytes of the rerun
  // output are held until the block's backward ends (reentrant: the layer's last kernel
  // reruns, and the nested backward's root is that output).
  int64_t checkpoint_stop    = -1;
  double checkpoint_output   = 0;
  double cached_weight_bytes = 0; // copies of the weights the stack keeps beside them (TE's FP8 weights and transposes)
  // Elements of each parameter tensor of params, in the order forward uses them (a stack
  // whose ZeRO-3 gathers parameters one by one fills it; empty: the block gathers whole).
  std::vector<double> tensors;
};

struct StepShape {
  int64_t micro_batch = 1;
  int64_t seq_len     = 1; // tokens of a sequence on this rank: seq_len / cp
  int64_t kv_seq      = 1; // keys each query attends over: the whole sequence
  int64_t cp          = 1;
  int64_t tp          = 1;
  int64_t ep          = 1;
  int64_t etp         = 1; // ranks each routed expert is split over (Megatron-Core's expert tensor parallelism)
  int64_t ep_nodes    = 1; // nodes the ep group spans, as many ranks on each (1: inside a node or uneven)
  std::shared_ptr<const TokenDispatcher> moe_dispatcher; // null: the registry's default
  bool sp                    = false;
  double act_bytes           = 2; // bytes per activation element (2 for 16-bit and fp8 training, 4 for fp32)
  double weight_bytes        = 2; // bytes per trainable weight element read by kernels
  double frozen_weight_bytes = 2; // LoRA base weights (0.5159 for NF4)
  Dtype gemm_dtype           = Dtype::bf16;
  Dtype attn_dtype           = Dtype::bf16;
  bool flash                 = true;
  // Whole layers recomputed in backward (Megatron's full recompute, Hugging Face's
  // gradient checkpointing).
  bool recompute_layers = false;
  LoraConfig lora;
  Optimizer optimizer = Optimizer::adam;             // TrainingConfig::optimizer
  bool liger_kernel   = false;                       // TrainingConfig::liger_kernel
  std::optional<ReleaseNumber> transformers_release; // TrainingConfig::transformers_release
};

StepShape step_shape(const TrainingConfig& cfg);

BlockPlan embedding_block(const ModelSpec& m, const StepShape& s);
BlockPlan transformer_layer_block(const ModelSpec& m, const StepShape& s, int64_t layer);
BlockPlan head_block(const ModelSpec& m, const StepShape& s);

} // namespace memwall

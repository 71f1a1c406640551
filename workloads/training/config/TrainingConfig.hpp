#pragma once
// The `training` section: batch shape, precision, optimizer, the parallel layout
// (tp x pp x dp), ZeRO, recompute, LoRA and offload, and the configured stack, schedule
// and dispatcher. Every key is read, documented and checked in read_training_section()
// (TrainingSection.hpp) or by the implementation that owns it; inconsistent combinations
// are refused there.
#include "base/ReleaseNumber.hpp"
#include "hwmodels/kernel/Dtype.hpp"
#include "workloads/model/ModelSpec.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

enum class Optimizer { adam, adamw, adam8bit, sgd, adafactor, paged_adamw_32bit, paged_adamw_8bit };
// bitsandbytes' paged AdamW (the Trainer's optim="paged_adamw_32bit" / "paged_adamw_8bit"):
// its states in CUDA managed memory, prefetched to the GPU before each update.
inline bool is_paged(Optimizer o) { return o == Optimizer::paged_adamw_32bit || o == Optimizer::paged_adamw_8bit; }
// FLOPs an optimizer's update spends per parameter: Adam's moments, bias correction and
// update 12; SGD with momentum 4; Adafactor's factored moments 10.
double optimizer_flops_per_param(Optimizer o);
enum class Recompute { none, selective, full };
enum class OffloadTarget { none, cpu, nvme };

struct LoraConfig {
  bool enabled  = false;
  int64_t rank  = 16;
  bool nf4_base = false; // QLoRA: frozen base weights in 4-bit NormalFloat with double quantization
  // get_peft_model's autocast_adapter_dtype: True (PEFT's default) keeps the adapters in
  // fp32; False leaves them in the base model's dtype, the compute precision's.
  Dtype adapter_dtype = Dtype::fp32;
  // PEFT's lora_dropout: nn.Dropout(p) on each adapted projection's x while the model
  // trains; 0 (LoraConfig's default) runs nn.Identity.
  double dropout = 0;
  // Projections that get adapters: memwall's groups (qkv, proj, mlp.up, mlp.down), which
  // every stack knows, or transformers' module names as PEFT's target_modules lists them
  // (q_proj, v_proj, ...: stacks running transformers' modules).
  std::vector<std::string> targets{"qkv", "proj", "mlp.up", "mlp.down"};
  bool targets_kernel(const std::string& gemm) const;
  // A transformers projection of group `group` named `module`: adapted when either is a target.
  bool targets_module(const std::string& group, const std::string& module) const;
};
// The targets a LoRA section may name: the groups, then transformers' module names.
const std::vector<std::string>& lora_target_groups();
const std::vector<std::string>& lora_module_names();
bool is_lora_module_name(const std::string& target);

// The implementations a spec picks, configured (TrainingSection makes them; their
// interfaces live in the concern folders above this one).
class TrainingStack;
class PipelineSchedule;
class TokenDispatcher;

struct TrainingConfig {
  int64_t seq_len      = 1024;
  int64_t global_batch = 8; // sequences per optimizer step, all replicas together
  int64_t micro_batch  = 1; // sequences per forward/backward pass on one replica
  int64_t tp           = 1; // tensor-parallel ranks per layer (Megatron)
  int64_t pp           = 1; // pipeline stages
  int64_t dp           = 1; // data-parallel replicas
  int64_t ep           = 1; // expert-parallel ranks (MoE), folded over the tp x cp x dp ranks
  int64_t etp          = 1; // expert-tensor-parallel ranks: each routed expert split this many ways (default tp)
  std::shared_ptr<const TokenDispatcher> moe_dispatcher; // how tokens reach their experts
  int64_t cp            = 1;     // context-parallel ranks: each holds seq_len / cp tokens of every sequence
  bool sp               = false; // sequence parallelism inside the tp group
  int zero              = 0;     // ZeRO stage 0..3
  int64_t zero_prefetch = 1;     // ZeRO-3: layers whose parameters are gathered ahead of use
  std::shared_ptr<const TrainingStack> stack; // the software stack that runs the step
  std::string allocator; // the GPU memory allocator the replay models, by name (sim/allocator; "": the stack's)
  std::shared_ptr<const PipelineSchedule> pipeline_schedule;
  int64_t virtual_stages = 1; // model chunks per pipeline stage (interleaved schedule)
  // Uneven pipelines (Megatron's --decoder-first/last-pipeline-num-layers): layers of
  // the first and last stage, the rest split evenly; 0: an even split.
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers  = 0;
  // Megatron-Core's account_for_embedding_in_pipeline_split / account_for_loss_in_
  // pipeline_split: the embedding (the loss) counts as a layer in the even split, so the
  // first (last) virtual stage builds one layer fewer.
  bool embedding_in_split = false;
  bool loss_in_split      = false;
  // With no split asked for, the stack's own: torchtitan's generate_split_points (the
  // `fsdp` stack: TrainingStack::splits_stages_as_torchtitan) where true, else even.
  bool torchtitan_split = false;
  Recompute recompute   = Recompute::none;
  // Full recompute as Megatron-Core's --recompute-method block --recompute-num-layers N:
  // only the first N layers of each model chunk recompute (0: every layer, uniformly).
  int64_t recompute_block_layers = 0;
  Dtype precision                = Dtype::bf16; // compute dtype; anything but fp32 keeps fp32 master weights
  Optimizer optimizer            = Optimizer::adam;
  bool flash_attention           = true;
  double bucket_bytes            = 25.0 * 1024 * 1024; // gradient bucket (PyTorch DDP default 25 MiB)
  bool overlap_grad_reduce       = true;
  int64_t buckets_in_flight      = 2; // ZeRO-2/3: gradient buckets reducing while backward goes on
  LoraConfig lora;
  // Liger-Kernel in place of transformers' modules (the Trainer's use_liger_kernel): for
  // the stacks that run them (pytorch; deepspeed with modules: transformers).
  bool liger_kernel = false;
  // The transformers release whose modules those stacks run (training.transformers_release;
  // none: the newest memwall has read).
  std::optional<ReleaseNumber> transformers_release;
  OffloadTarget offload_optimizer = OffloadTarget::none;
  OffloadTarget offload_params    = OffloadTarget::none;
  // Offloaded step: false (DeepSpeed's default) starts the CPU optimizer after the whole
  // backward pass; true starts each block's step as soon as its gradients reach the host.
  bool overlap_offloaded_step = false;
  // Host buffers of offloaded gradients and weights page-locked (DeepSpeed's pin_memory,
  // off by default): pageable copies are staged through the driver's pinned buffer.
  bool offload_pinned = false;
  // Unified memory is on (spec `memory`): kernels record the tensors they touch.
  bool record_tensor_accesses = false;

  bool mixed_precision() const { return precision != Dtype::fp32; }
  int64_t micro_batches() const { return global_batch / (micro_batch * dp); }
  int64_t gpus() const { return tp * pp * cp * dp; }
  // Ranks holding the same parameters of a stage: gradients are reduced (and ZeRO shards
  // taken) over all of them (Megatron-Core's data-parallel group with context parallelism).
  int64_t replicas() const { return cp * dp; }
  // Layers of each virtual stage (chunk * pp + stage), in order; empty when they do not
  // split as asked (read_training_section refuses that).
  std::vector<int64_t> stage_layers(int64_t layers) const;
  // MoE layers fold the ranks differently from the dense ones (ep > 1, or experts not
  // split like the rest): routed experts' gradients then go over their own (edp) group.
  bool experts_folded() const { return ep > 1 || etp != tp; }
  // A routed expert's ZeRO shard over the edp = tp x cp x dp / (etp x ep) ranks holding
  // it, relative to a dense parameter's over the cp x dp replicas.
  double expert_shard_scale() const { return static_cast<double>(ep * etp) / static_cast<double>(tp); }
  double tokens_per_step() const { return static_cast<double>(global_batch) * static_cast<double>(seq_len); }
};

} // namespace memwall

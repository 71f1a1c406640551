#pragma once
// A training software stack: what it launches, keeps and holds for the same model and
// parallel layout. Megatron-LM fuses its kernels and holds bf16 weights with fp32 master
// weights and optimizer states; eager PyTorch under torch.autocast launches each module's
// ops apart, keeps fp32 parameters and gradients and casts the weights per use. One
// interface, implementations in impl/ registered by name and chosen by `training.stack`
// (`memwall list stacks`); a stack is one file there and its tests. A stack reads its own
// keys (DeepSpeed's `deepspeed` section) when the registry makes it, and the section
// reader keeps the configured object in TrainingConfig::stack: what needs the stack asks it.
#include "base/Registry.hpp"
#include "workloads/model/ModelSpec.hpp"
#include "workloads/training/blocks/BlockKernels.hpp"
#include "workloads/training/config/TrainingConfig.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

// Bytes per trainable parameter of each model state a rank holds (before ZeRO shards them).
struct ModelStateBytes {
  double weights   = 2;  // the weights kept between steps
  double gradients = 2;  // the gradient buffer backward accumulates into
  double optimizer = 12; // optimizer states, with any fp32 master copy of the weights
  double gathered  = 0;  // ZeRO-3 / FSDP: what a gathered (unsharded) parameter takes; 0: as `weights`
};

// One kernel of the optimizer step over a block's parameters (this rank's shard).
struct OptimizerPass {
  std::string name;
  double flops_per_param = 0;
  double bytes_per_param = 0;
  bool grads = false, states = false, weights = false; // what it touches (unified memory)
};

// ZeRO-3: one use of a block's parameters in the step's order of uses (each
// micro-batch's forward in block order, its backward in reverse, as the schedule runs them).
struct ParamUse {
  const std::vector<double>* tensors = nullptr; // the block's tensors, in elements (BlockPlan::tensors; may be none)
  int64_t block                      = 0;
  bool forward                       = true;
  bool recomputed                    = false; // a backward that first recomputes the layer whole
  double elements                    = 0;     // parameter elements it needs gathered: the block's, less persistent ones
  size_t slot = 0; // the schedule slot (a chunk's forward or backward of a micro-batch) it runs in
};
// How one use's parameters are gathered (TrainingStack::plan_gathers), in indices of
// uses; the step generator emits it as told (ParamGather).
struct UseGather {
  static constexpr size_t none = static_cast<size_t>(-1);
  // The use whose gathered buffer this one reads: itself where it all-gathers, an earlier
  // use of its block whose buffer is still held, none where nothing is gathered.
  size_t buffer = none;
  // Where it all-gathers: the use at whose start the gather is issued (an earlier one:
  // prefetched), the use whose buffer must be freed before this one is allocated (the
  // window that bounds the buffers alive; none: no wait), and the use after which the
  // buffer is freed (itself: resharded as soon as it has run).
  size_t issued_at   = 0;
  size_t waits_for   = none;
  size_t freed_after = none;
  // The all-gather also waits for the compute issued before use issued_at begins (FSDP2:
  // a copy-in waits for the compute stream to have consumed the all-gather before it),
  // where no free bounds it.
  bool after_compute = false;
};
using GatherPlan = std::vector<UseGather>;
// Per use: (tensor index, elements) it all-gathers.
using FetchPlan = std::vector<std::vector<std::pair<size_t, double>>>;
// How such a stack issues a tensor's collective.
struct TensorCalls {
  // One collective per parameter over lists of one view per rank, each view built and
  // copied by the host (DeepSpeed 0.3-0.4 on PyTorch <= 1.9).
  bool per_parameter           = false;
  double host_seconds_per_view = 0, host_seconds_per_copy = 0;
  double reduce_bucket_numel = 5e8; // gradient elements reduced in one collective
};

// The host of an eager stack: the CPU time its Python modules, the dispatcher and
// autocast spend per kernel they launch in forward (and in a recomputed forward), and
// autograd's engine per kernel in backward. The GPU cannot run a kernel before the host
// has launched it: a small model's step is the host's. 0: the host keeps ahead (a
// compiled or fused stack).
struct EagerHost {
  double forward_s_per_kernel  = 0;
  double backward_s_per_kernel = 0;
  double loop_s_per_kernel     = 0; // a kernel an op launches from its own C++ loop (KernelPlan::host_loop)
};

// Another stack that runs the same model code where this one cannot shard or offload
// model states: `change` says it in words ("" when none is needed), `overrides` make it.
struct StackSwitch {
  std::string change;
  std::vector<std::string> overrides;
};

class TrainingStack : public Implementation {
public:
  // Refuses (r.fail, naming the key) a layout or option this stack does not run.
  virtual void check(ParamReader&, const TrainingConfig&, const ModelSpec&) const {}
  // The stack's own defaults for the keys a spec leaves out (ParamReader::has tells).
  virtual void adjust(const ParamReader&, TrainingConfig&) const {}
  // Whether the stack runs bitsandbytes' paged optimizers (training.optimizer paged_*).
  virtual bool runs_paged_optimizers() const { return false; }
  // The kernels of one rank's blocks in forward order (BlockKernels.hpp): what each
  // launches forward and backward, its bytes and FLOPs, and what it keeps for backward.
  virtual BlockPlan embedding(const ModelSpec& m, const StepShape& s) const                = 0;
  virtual BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t layer) const     = 0;
  virtual BlockPlan head(const ModelSpec& m, const StepShape& s) const                     = 0;
  virtual ModelStateBytes state_bytes(const TrainingConfig& cfg, const ModelSpec& m) const = 0;
  // DDP as PyTorch runs it by default (gradient_as_bucket_view=False): flat buckets beside
  // the gradients (as many bytes again), each gradient copied in (scaled by 1/dp) before
  // its bucket's all-reduce and copied back after it. Megatron's DDP reduces its main
  // gradient buffer in place.
  virtual bool ddp_copies_gradients() const { return false; }
  // Whether the gradients of pipeline stage `stage`'s model chunk `chunk` are reduced in
  // training.bucket_bytes buckets (else the chunk is one bucket: GradBuckets.hpp).
  virtual bool buckets_gradients(int /*stage*/, int64_t /*chunk*/) const { return true; }
  // Megatron's overlap_param_gather: the updated weights are all-gathered bucket by
  // bucket ahead of the next step's first forward, not after the optimizer step.
  virtual bool gathers_weights_in_forward() const { return false; }
  // ZeRO's gathers and reductions run on the compute stream, one after another
  // (DeepSpeed without overlap_comm); else on streams of their own.
  virtual bool serial_collectives(const TrainingConfig&) const { return false; }
  // ZeRO-3 across pipeline stages: each stage shards its own blocks over the dp ranks
  // (FSDP2 applied to each stage's model chunks under torch.distributed.pipelining).
  virtual bool shards_with_pipeline() const { return false; }
  // With no pipeline split asked for, layers go to stages as torchtitan's
  // generate_split_points puts them (uneven where they do not divide) instead of evenly.
  virtual bool splits_stages_as_torchtitan() const { return false; }
  // ZeRO-3: each micro-batch's gradient summed into an unsharded buffer of the gradient
  // dtype and reduce-scattered once, with its model chunk's others after the chunk's last
  // backward of the step (FSDP2 under a pipeline schedule: gradient sync off until then,
  // the compute stream waiting for the reduce-scatters from the stage's next pass); else
  // reduce-scattered every micro-batch.
  virtual bool accumulates_unsharded(const TrainingConfig&) const { return false; }
  // The ZeRO stage a spec that names none runs (FSDP shards everything: 3).
  virtual int default_zero() const { return 0; }
  // The ZeRO stages the stack runs as its own (what `memwall optimize` tries), and whether
  // it offloads model states to the host (ZeRO-Offload, ZeRO-Infinity).
  virtual std::vector<int> zero_stages() const { return {0}; }
  virtual bool offloads_states() const { return false; }
  // Where the stack does neither (plain DDP), the stack a remedy that shards or offloads
  // model states switches to (the advisor's); none where it does them itself.
  virtual StackSwitch sharding_switch() const { return {}; }
  // Whether the stack runs Liger's kernels (training.liger_kernel) on the model: it runs
  // transformers' modules and the model is one Liger patches.
  virtual bool runs_liger(const ModelSpec&) const { return false; }
  // Whether the stack runs transformers' modules (training.transformers_release applies).
  virtual bool runs_transformers_modules() const { return false; }
  // Whether the stack runs LoRA adapters (training.lora) on the model.
  virtual bool runs_lora(const ModelSpec&) const { return false; }
  // The GPU memory allocator the stack's process runs (sim/allocator; "": tensor bytes
  // counted as they are).
  virtual std::string allocator() const { return ""; }
  // The optimizer step's kernels on the GPU, in order; the gradients are freed after them.
  virtual std::vector<OptimizerPass> optimizer_passes(const TrainingConfig& cfg, const ModelStateBytes& b) const = 0;
  // ZeRO-3 tensor by tensor: elements of `tensors` held whole on every rank (never
  // gathered), what each use gathers, and how the calls are issued. By default nothing
  // persists and every use gathers all its tensors.
  virtual double persistent_elements(const std::vector<double>& tensors) const;
  virtual FetchPlan plan_fetches(const std::vector<ParamUse>& uses) const;
  virtual TensorCalls tensor_calls() const { return {}; }
  // Host time per launched kernel of the block passes (none: the host keeps ahead).
  virtual EagerHost eager_host() const { return {}; }
  // ZeRO-3: which use all-gathers, how far ahead, within what window, and when its buffer
  // is freed. By default ZeRO-3's generic prefetch, training.zero_prefetch uses ahead.
  virtual GatherPlan plan_gathers(const std::vector<ParamUse>& uses, const TrainingConfig& cfg) const;
};

// ZeRO-3's generic prefetch (Rajbhandari et al. 2020: parameters all-gathered ahead
// of use and released after it): every use with parameters to gather all-gathers them
// into a buffer of its own, issued `depth` uses ahead once the buffer of use j - 1 - depth
// is freed, and frees it after it has run. With depth k >= 1 a gather overlaps the
// previous use's compute and at most k + 1 buffers are alive; with 0 it starts when the
// previous use is done, exposed.
GatherPlan prefetched_gathers(const std::vector<ParamUse>& uses, size_t depth);

// Megatron-LM's and DeepSpeed's mixed precision: weights and gradients in the compute
// precision, fp32 master weights beside the optimizer's states (Adam: ZeRO's K = 12).
ModelStateBytes master_weight_state_bytes(const TrainingConfig& cfg, const ModelSpec& m);

// torch.optim.AdamW(fused=True) (_fused_adamw_): one multi_tensor_apply pass over
// (param, grad, exp_avg, exp_avg_sq), reading all four and writing all but the gradient.
// zero_grad(set_to_none=True) launches nothing: the gradients are freed.
OptimizerPass fused_adamw_pass(const TrainingConfig& cfg, const ModelStateBytes& b);

// Reads the stack's own keys from the `training` section.
using TrainingStackFactory = std::function<std::unique_ptr<TrainingStack>(ParamReader& training)>;

Registry<TrainingStackFactory>& training_stack_registry();
// The stack called `name` with its defaults (a stack named on the command line).
std::shared_ptr<const TrainingStack> default_training_stack(const std::string& name);

} // namespace memwall

#include "workloads/training/TrainingSection.hpp"

#include "workloads/model/InputLimits.hpp"
#include "workloads/modelcode/TransformersRelease.hpp"
#include "workloads/training/LoraSection.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>

namespace memwall {
namespace {

OffloadTarget offload_target(const std::string& s)
{
  return s == "cpu" ? OffloadTarget::cpu : s == "nvme" ? OffloadTarget::nvme : OffloadTarget::none;
}

// training.transformers_release: none where the spec names none (the newest read).
std::optional<ReleaseNumber> read_transformers_release(ParamReader& r)
{
  const bool given         = r.has("transformers_release");
  const std::string oldest = hf::oldest_transformers_release().str();
  const std::string newest = hf::newest_transformers_release().str();
  const std::string text   = r.text("transformers_release", newest,
                                    "the transformers release whose logits-and-loss path the stack runs (pytorch; "
                                      "deepspeed with modules: transformers; the rest of the modules as the newest), " +
                                        oldest + " to " + newest +
                                        " and later: LlamaForCausalLM cast the logits to fp32 and copied them shifted "
                                          "for the loss until 4.45, ForCausalLMLoss cast and copied them in 4.46-4.48, and "
                                          "cast them with the labels shifted instead from 4.49 (every family)");
  if (!given)
    return std::nullopt;
  std::optional<ReleaseNumber> release = ReleaseNumber::parse(text);
  if (!release)
    r.fail("transformers_release", "expected a release number such as 4.44.2, got '" + text + "'");
  if (*release < hf::oldest_transformers_release())
    r.fail("transformers_release",
           "transformers " + text + " is not modelled: releases from " + oldest + " on (the loss paths read)");
  return release;
}

void read_offload(ParamReader& parent, TrainingConfig& t)
{
  ParamReader r = parent.section("offload", "ZeRO-Offload / ZeRO-Infinity: where optimizer states and parameters live");
  t.offload_optimizer = offload_target(
      r.choice("optimizer", "none", {"none", "cpu", "nvme"},
               "optimizer states (and fp32 master weights) in host DRAM or on NVMe; the step runs on the CPU"));
  t.offload_params         = offload_target(r.choice("params", "none", {"none", "cpu", "nvme"},
                                                     "ZeRO-3 parameter shards in host DRAM or on NVMe, streamed per layer"));
  t.overlap_offloaded_step = r.flag("overlap_step", false,
                                    "start each block's CPU optimizer step as soon as its gradients reach the host, "
                                    "overlapping the rest of backward (false: after the whole backward, as "
                                    "DeepSpeed's optimizer.step() runs)");
  t.offload_pinned         = r.flag("pinned", false,
                                    "host buffers page-locked (DeepSpeed's pin_memory, off by default); pageable copies are "
                                            "staged through the driver's pinned buffer at hardware.node.pageable_copy_bw");
  r.finish();
}

std::string str(int64_t v) { return std::to_string(v); }

// "deepspeed 0, fsdp 3, ...": the ZeRO stage each stack, made with its defaults, runs
// when a spec names none.
std::string default_zero_by_stack()
{
  std::vector<std::string> parts;
  for (const std::string& name : training_stack_registry().names())
    parts.push_back(name + " " + std::to_string(default_training_stack(name)->default_zero()));
  return join(parts);
}

// Megatron-Core's recompute_method and recompute_num_layers (transformer_block.py,
// _checkpointed_forward) under full recompute: uniform checkpoints the input of each
// group of N layers and reruns the group; block checkpoints the first N layers of each
// model chunk one by one and keeps every activation of the rest.
void read_recompute_method(ParamReader& r, TrainingConfig& t)
{
  std::string method = r.choice("recompute_method", "uniform", {"uniform", "block"},
                                "full recompute, as Megatron-Core's --recompute-method: uniform (groups of "
                                "recompute_num_layers layers) or block (the first recompute_num_layers of each "
                                "model chunk)");
  int64_t n          = r.integer("recompute_num_layers", 1,
                                 "full recompute, as Megatron-Core's --recompute-num-layers: layers a uniform "
                                          "group holds, or layers of each model chunk a block recomputes",
                                 1, "", limits::layers);
  bool given         = r.has("recompute_method") || r.has("recompute_num_layers");
  if (given && t.recompute != Recompute::full)
    r.fail(r.has("recompute_method") ? "recompute_method" : "recompute_num_layers",
           "applies to recompute: full only (Megatron-Core: recompute_num_layers must be None otherwise)");
  if (method == "uniform" && n > 1)
    r.fail("recompute_num_layers", "uniform groups of more than one layer are not modelled (memwall recomputes "
                                   "layer by layer): use 1, or recompute_method: block");
  t.recompute_block_layers = method == "block" ? n : 0;
}

void check_layout(ParamReader& r, const TrainingConfig& t, int64_t gpus, const ModelSpec& m, bool dp_given)
{
  if (m.heads % t.tp != 0)
    r.fail("tp", "tp = " + str(t.tp) + " does not divide the model's " + str(m.heads) + " attention heads");
  // In double first: tp, pp and cp of up to 10^9 each overflow an int64 product.
  if (static_cast<double>(t.tp) * static_cast<double>(t.pp) * static_cast<double>(t.cp) > static_cast<double>(gpus) ||
      gpus % (t.tp * t.pp * t.cp) != 0)
    r.fail(t.cp > 1   ? "cp"
           : t.pp > 1 ? "pp"
                      : "tp",
           (t.cp > 1 ? "tp x pp x cp = " : "tp x pp = ") + str(t.tp * t.pp * t.cp) + " does not divide the " +
               str(gpus) + " GPUs");
  if (dp_given && t.gpus() != gpus)
    r.fail("dp", "tp x pp x " + std::string(t.cp > 1 ? "cp x " : "") + "dp = " + str(t.tp) + " x " + str(t.pp) +
                     (t.cp > 1 ? " x " + str(t.cp) : std::string()) + " x " + str(t.dp) + " = " + str(t.gpus()) +
                     " but the hardware has " + str(gpus) + " GPUs");
  if (t.seq_len % t.cp != 0)
    r.fail("cp", "cp = " + str(t.cp) + " does not divide seq_len " + str(t.seq_len) +
                     " (each context-parallel rank holds seq_len / cp tokens)");
  bool uneven                      = t.first_stage_layers > 0 || t.last_stage_layers > 0;
  bool counted                     = t.embedding_in_split || t.loss_in_split;
  const std::vector<int64_t> split = t.stage_layers(m.layers);
  const char* counted_key =
      t.embedding_in_split ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split";
  if (counted && uneven) // transformer_config.py raises the same
    r.fail(counted_key, "cannot be set with first_stage_layers or last_stage_layers");
  if (counted && split.empty())
    r.fail(counted_key, "the model's " + str(m.layers) + " layers" + (t.embedding_in_split ? " + 1 (embedding)" : "") +
                            (t.loss_in_split ? " + 1 (loss)" : "") +
                            " do not split evenly over pp x virtual_stages = " + str(t.pp * t.virtual_stages) +
                            " stages");
  if (uneven && (t.pp < 2 || t.virtual_stages > 1))
    r.fail(t.first_stage_layers > 0 ? "first_stage_layers" : "last_stage_layers",
           "an uneven pipeline needs pp >= 2 and virtual_stages: 1");
  if (uneven && split.empty())
    r.fail(t.first_stage_layers > 0 ? "first_stage_layers" : "last_stage_layers",
           "the model's " + str(m.layers) +
               " layers less the first and last stages' do not split evenly over the other " +
               str(t.pp - (t.first_stage_layers > 0) - (t.last_stage_layers > 0)) + " stages");
  if (!uneven && !counted && t.torchtitan_split && split.empty())
    r.fail(t.virtual_stages > 1 ? "virtual_stages" : "pp",
           "pp x virtual_stages = " + str(t.pp * t.virtual_stages) + " stages exceed the model's " + str(m.layers) +
               " layers (torchtitan: \"Total stages cannot be greater than the number of layers\")");
  if (!uneven && !counted && !t.torchtitan_split && m.layers % (t.pp * t.virtual_stages) != 0)
    r.fail(t.virtual_stages > 1 ? "virtual_stages" : "pp",
           "pp x virtual_stages = " + str(t.pp * t.virtual_stages) + " does not divide the model's " + str(m.layers) +
               " layers (an uneven pipeline: first_stage_layers, last_stage_layers)");
  if (t.sp && t.tp == 1)
    r.fail("sp", "sequence parallelism splits activations over the tp group: it needs tp > 1");
  if (t.global_batch % (t.micro_batch * t.dp) != 0)
    r.fail("global_batch", "global_batch " + str(t.global_batch) +
                               " is not a multiple of micro_batch x dp = " + str(t.micro_batch * t.dp));
  int64_t per_stage =
      split.empty() ? m.layers / t.pp : *std::max_element(split.begin(), split.end()) * t.virtual_stages;
  int64_t passes = t.micro_batches() * per_stage;
  if (passes > limits::layer_passes)
    r.fail("global_batch", "each GPU would replay " + str(passes) + " layer passes per step (" +
                               str(t.micro_batches()) + " micro-batches x " + str(per_stage) +
                               " layers), more than the limit " + str(limits::layer_passes) +
                               "; raise micro_batch or lower global_batch");
  t.pipeline_schedule->check({t.pp, t.virtual_stages, t.micro_batches()}, r);
}

// Expert parallelism (Megatron-Core's MoE folding): each rank of an ep group holds
// experts / ep experts, each split over etp ranks; with tp > 1 Megatron requires
// sequence parallelism around the MoE layers.
void check_experts(ParamReader& r, const TrainingConfig& t, const ModelSpec& m)
{
  if (!m.moe.enabled()) {
    if (t.ep > 1)
      r.fail("ep", "expert parallelism needs a mixture-of-experts model (model.num_experts > 0)");
    for (const char* k : {"etp", "moe_dispatcher"})
      if (r.has(k))
        r.fail(k, std::string(k) + " needs a mixture-of-experts model (model.num_experts > 0)");
    return;
  }
  if (m.moe.experts % t.ep != 0)
    r.fail("ep", "ep = " + str(t.ep) + " does not divide the model's " + str(m.moe.experts) + " experts");
  if (t.tp % t.etp != 0)
    r.fail("etp", "etp = " + str(t.etp) + " must divide tp = " + str(t.tp) +
                      " (an expert's slices are gathered over ranks that share a micro-batch)");
  const int64_t ranks = t.tp * t.replicas(); // of one pipeline stage
  if (ranks % (t.etp * t.ep) != 0)
    r.fail("ep", "etp x ep = " + str(t.etp) + " x " + str(t.ep) + " does not divide the " + str(ranks) +
                     " ranks of a pipeline stage (tp x " + (t.cp > 1 ? "cp x dp" : "dp") + " = " + str(t.tp) + " x " +
                     str(t.replicas()) + "): MoE layers fold them as etp x ep x edp");
  if (t.tp > 1 && !t.sp)
    r.fail("sp", "mixture-of-experts layers with tp > 1 need sp: true (Megatron-Core requires sequence parallelism)");
  if (t.lora.enabled)
    r.fail("lora", "LoRA on a mixture-of-experts model is not supported");
  if (t.zero == 3 && (t.ep > 1 || t.etp != t.tp))
    r.fail(
        "zero",
        "ZeRO-3 with expert parallelism is not supported; use zero <= 2 (Megatron's distributed optimizer is ZeRO-1)");
}

void check_memory_options(ParamReader& r, const TrainingConfig& t, const TrainingStack& stack)
{
  if (t.zero == 3 && t.pp > 1 && !stack.shards_with_pipeline())
    r.fail("zero", "training stack " + stack.name() +
                       " does not shard parameters across pipeline stages (zero 3 with pp > 1); use zero <= 1, or "
                       "stack fsdp (FSDP2 on each stage)");
  if (t.offload_params != OffloadTarget::none && t.zero != 3)
    r.fail("offload", "offload.params needs zero: 3 (ZeRO-Infinity offloads parameter shards)");
  if (t.offload_params != OffloadTarget::none && t.offload_optimizer == OffloadTarget::none)
    r.fail("offload", "offload.params needs offload.optimizer too: the update runs where the parameters live");
  if (t.offload_optimizer != OffloadTarget::none && t.zero == 0)
    r.fail("offload", "offload.optimizer needs zero >= 1 (ZeRO-Offload partitions the optimizer step)");
  if (t.offload_optimizer != OffloadTarget::none && t.pp > 1)
    r.fail("offload", "offload is not supported with pipeline parallelism (pp > 1)");
  if (t.lora.enabled && t.zero == 3)
    r.fail("lora", "LoRA with ZeRO-3 is not supported: the frozen base would be gathered for nothing; use zero <= 2");
  if (t.lora.nf4_base && t.precision == Dtype::fp32)
    r.fail("lora", "QLoRA (base: nf4) computes in bf16 or fp16, not fp32");
  if (t.lora.adapter_dtype != Dtype::fp32 && t.lora.adapter_dtype != t.precision)
    r.fail("lora",
           std::string("adapter_dtype ") + dtype_name(t.lora.adapter_dtype) +
               ": autocast_adapter_dtype=False leaves the adapters in the model's dtype, here " +
               dtype_name(t.precision) + " (precision); allowed: fp32" +
               (t.precision == Dtype::fp16 ? " (the Trainer's GradScaler refuses fp16 trainable parameters)" : ""));
  if (t.bucket_bytes <= 0)
    r.fail("bucket_bytes", "must be positive");
}

} // namespace

TrainingConfig read_training_section(ParamReader& r, int64_t gpus, const ModelSpec& model)
{
  TrainingConfig t;
  t.seq_len      = r.integer("seq_len", t.seq_len, "tokens per sequence", 1, "", limits::tokens);
  t.global_batch = r.integer("global_batch", t.global_batch, "sequences per optimizer step (all replicas)", 1, "",
                             limits::sequences);
  t.micro_batch  = r.integer("micro_batch", t.micro_batch, "sequences per forward/backward pass on one GPU", 1, "",
                             limits::sequences);
  t.tp           = r.integer("tp", 1, "tensor-parallel degree (Megatron column/row split of attention and MLP)", 1);
  t.pp           = r.integer("pp", 1, "pipeline-parallel stages", 1);
  bool dp_given  = r.has("dp");
  t.dp           = r.integer("dp", 0, "data-parallel replicas", 1, "GPUs / (tp x pp x cp)");
  t.cp           = r.integer("cp", 1,
                             "context-parallel degree: each sequence split over this many ranks, K and V all-gathered "
                                       "for attention (long context)",
                             1, "", limits::tokens);
  t.ep           = r.integer("ep", 1,
                             "expert-parallel degree: routed experts spread over this many ranks (MoE); with etp = tp they are "
                                       "data-parallel ranks, with a smaller etp the group runs across the tp ranks too",
                             1, "", limits::experts);
  t.etp          = r.integer("etp", t.tp,
                             "expert-tensor-parallel degree: each routed expert split over this many ranks (Megatron-Core's "
                                      "expert_tensor_parallel_size; 1: experts whole, no tp collectives around them)",
                             1, "tp", limits::experts);
  const auto& dispatchers = token_dispatcher_registry();
  t.moe_dispatcher        = dispatchers.make(
             r.choice("moe_dispatcher", dispatchers.default_name(), dispatchers.names(),
                      "how an MoE layer's tokens reach their experts' GPUs and come back; see `memwall list dispatchers`"),
             r);
  t.sp =
      r.flag("sp", false, "sequence parallelism: all-gather/reduce-scatter instead of all-reduce, norms split by tp");
  // The stack reads its own keys now; what needs it asks the object (TrainingConfig::stack).
  const auto& stacks                   = training_stack_registry();
  const std::string name               = r.choice("stack", stacks.default_name(), stacks.names(),
                                                  "the software stack that runs the step: what it launches, keeps and holds (see "
                                                                "`memwall list stacks`)");
  std::unique_ptr<TrainingStack> stack = stacks.make(name, r);
  t.zero                               = static_cast<int>(r.integer("zero", stack->default_zero(),
                                                                    "ZeRO stage: 0 none, 1 optimizer states, 2 + gradients, 3 + parameters", 0,
                                                                    "the stack's: " + default_zero_by_stack(), 3));
  t.zero_prefetch =
      r.integer("zero_prefetch", 1, "ZeRO-3: layers whose parameters are all-gathered ahead of use (0: none)", 0);
  YAML::Node allocator = r.take("allocator", "name (see `memwall list allocators`)",
                                "the GPU memory allocator that serves the step's tensors: what the device holds "
                                "beside what they use, and when it runs out",
                                "the stack's");
  if (allocator.IsDefined() && !allocator.IsNull()) {
    if (!allocator.IsScalar())
      r.fail("allocator", "expected an allocator's name (see `memwall list allocators`)");
    t.allocator = allocator.Scalar();
  }
  const auto& schedules = pipeline_schedule_registry();
  t.pipeline_schedule   = schedules.make(r.choice("pipeline_schedule", schedules.default_name(), schedules.names(),
                                                  "pipeline schedule (see `memwall list schedules`)"),
                                         r);
  t.virtual_stages      = r.integer("virtual_stages", 1, "model chunks per pipeline stage (interleaved schedule)", 1);
  t.first_stage_layers =
      r.integer("first_stage_layers", 0, "layers of the first pipeline stage, the rest split evenly (0: an even split)",
                0, "", limits::layers);
  t.last_stage_layers =
      r.integer("last_stage_layers", 0, "layers of the last pipeline stage, the rest split evenly (0: an even split)",
                0, "", limits::layers);
  t.embedding_in_split = r.flag("account_for_embedding_in_pipeline_split", false,
                                "Megatron-Core's: the embedding counts as a layer in the pipeline's even split "
                                "(the first virtual stage builds one layer fewer)");
  t.loss_in_split      = r.flag("account_for_loss_in_pipeline_split", false,
                                "Megatron-Core's: the output layer and loss count as a layer in the pipeline's even "
                                     "split (the last virtual stage builds one layer fewer)");
  std::string rc       = r.choice("recompute", "none", {"none", "selective", "full"},
                                  "activation recomputation: selective (attention core) or full (keep layer inputs only)");
  t.recompute          = rc == "full" ? Recompute::full : rc == "selective" ? Recompute::selective : Recompute::none;
  read_recompute_method(r, t);
  std::string p     = r.choice("precision", "bf16", {"fp32", "bf16", "fp16", "fp8"},
                               "compute precision; bf16/fp16/fp8 keep fp32 master weights (fp8: bf16 weights, fp8 GEMMs)");
  t.precision       = *dtype_from_name(p);
  std::string o     = r.choice("optimizer", "adam",
                               {"adam", "adamw", "adam8bit", "sgd", "adafactor", "paged_adamw_32bit", "paged_adamw_8bit"},
                               "adam or adamw (2 fp32 states; adamw's decoupled weight decay costs the same), adam8bit (2 "
                                   "one-byte states), sgd with momentum, adafactor (factored); paged_adamw_32bit and "
                                   "paged_adamw_8bit are bitsandbytes' paged AdamW (stack pytorch): its states in CUDA "
                                   "managed memory, which the driver evicts to the host when HBM runs short");
  t.optimizer       = o == "adam"                ? Optimizer::adam
                      : o == "adamw"             ? Optimizer::adamw
                      : o == "adam8bit"          ? Optimizer::adam8bit
                      : o == "sgd"               ? Optimizer::sgd
                      : o == "paged_adamw_32bit" ? Optimizer::paged_adamw_32bit
                      : o == "paged_adamw_8bit"  ? Optimizer::paged_adamw_8bit
                                                 : Optimizer::adafactor;
  t.flash_attention = r.flag("flash_attention", t.flash_attention,
                             "fused attention; off stores the s x s scores, softmax and dropout mask");
  t.bucket_bytes = r.quantity("bucket_bytes", QuantityKind::bytes, t.bucket_bytes, "gradient bucket size (DDP, ZeRO)");
  t.overlap_grad_reduce  = r.flag("overlap_grad_reduce", t.overlap_grad_reduce,
                                  "reduce gradient buckets during backward instead of after it");
  t.buckets_in_flight    = r.integer("buckets_in_flight", t.buckets_in_flight,
                                     "ZeRO-2/3: gradient buckets being reduced (and copied to the host) while backward "
                                        "goes on; backward waits for the oldest beyond this (DeepSpeed overlap_comm: 2)",
                                     1);
  t.lora                 = read_lora_section(r);
  t.liger_kernel         = r.flag("liger_kernel", false,
                                  "the Trainer's use_liger_kernel: Liger's fused RMSNorm, SwiGLU, RoPE and linear cross "
                                          "entropy (no logits held) in place of transformers' Llama modules (stack pytorch, "
                                          "or deepspeed with modules: transformers)");
  t.transformers_release = read_transformers_release(r);
  read_offload(r, t);
  // Every key is read: what is left and another stack reads is refused naming it.
  stacks.refuse_others_keys(name, r);
  if (t.seq_len > model.max_seq_len)
    r.fail("seq_len",
           str(t.seq_len) + " exceeds the model's max_seq_len " + str(model.max_seq_len) +
               " (a model extended to longer contexts: set model.max_seq_len, e.g. --set model.max_seq_len=" +
               str(t.seq_len) + ")");
  if (!dp_given)
    t.dp = std::max<int64_t>(1, gpus / (t.tp * t.pp * t.cp));
  t.torchtitan_split = stack->splits_stages_as_torchtitan();
  check_layout(r, t, gpus, model, dp_given);
  check_memory_options(r, t, *stack);
  check_experts(r, t, model);
  stack->adjust(r, t);
  stack->check(r, t, model);
  if (is_paged(t.optimizer) && !stack->runs_paged_optimizers())
    r.fail("optimizer",
           "training.stack " + stack->name() +
               " does not run bitsandbytes' paged optimizers (stack pytorch does, as the Trainer's optim)");
  check_lora(r, t, *stack);
  if (t.transformers_release && !stack->runs_transformers_modules())
    r.fail("transformers_release",
           "training.transformers_release: the release of transformers' modules: stack pytorch, "
           "or deepspeed with modules: transformers");
  if (t.transformers_release) {
    const std::string why = hf::transformers_release_refusal(model, *t.transformers_release);
    if (!why.empty())
      r.fail("transformers_release", "training.transformers_release: " + why);
  }
  if (t.liger_kernel && !stack->runs_liger(model)) // the stacks that run transformers' modules say why above
    r.fail("liger_kernel", "training.liger_kernel: Liger replaces transformers' modules: stack pytorch, or deepspeed "
                           "with modules: transformers");
  t.stack = std::move(stack);
  r.finish();
  return t;
}

} // namespace memwall

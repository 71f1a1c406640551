// `pytorch`: a Hugging Face model in eager PyTorch, as the Trainer, accelerate and most
// fine-tuning scripts run it: fp32 parameters under torch.autocast (bf16 or fp16),
// every module's ops launched apart (HfModules.hpp), DDP across data-parallel ranks
// (fp32 gradient buckets of 25 MiB all-reduced as backward produces them), and
// torch.optim.AdamW(fused=True) over fp32 states.
//
// Model states: fp32 weights (4 B), fp32 gradients (4 B, allocated by backward and
// freed by zero_grad(set_to_none=True)), Adam's two fp32 moments (8 B): 16 B per
// parameter with no master copy; autocast's bf16 copies of the weights (2 B) live from
// each layer's forward to its backward.
#include "workloads/modelcode/HfModel.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>
#include <optional>

namespace memwall {
namespace {

// The eager host's time per kernel, from the `pytorch` section. Defaults: the GPT-2
// step profiled on the H200 machine (tests/data/traces/h200-gpt2-hf-train.json.gz, torch
// 2.11, transformers 5.17): 449 launches by the forward thread over 30.7 ms, 755 by
// autograd's over 26.1 ms, the whole host span 62.0 ms against 43.1 ms for the same step
// unprofiled (hf-families.csv; the GPU busy 30.4 ms of it, so the host's time both
// ways): the profiler's share taken out in proportion.
struct EagerKnobs {
  EagerHost host;
  bool use_cache = true;
  std::optional<bool> use_reentrant; // unset: the transformers release's default
  bool given = false;                // the spec has a `pytorch` section
};

// bitsandbytes' 8-bit AdamW, paged or not.
bool eight_bit(Optimizer o) { return o == Optimizer::adam8bit || o == Optimizer::paged_adamw_8bit; }

EagerKnobs read_knobs(ParamReader& training)
{
  ParamReader r = training.section(
      "pytorch",
      "the eager host's pace, the model's use_cache and gradient checkpointing's use_reentrant (training.stack "
      "pytorch)");
  EagerKnobs knobs;
  knobs.given         = training.has("pytorch");
  knobs.use_cache     = r.flag("use_cache", true,
                               "the model config's use_cache: transformers builds a DynamicCache in training too (k and v "
                                   "copied each layer, in fp32 after rotary embeddings under autocast) unless gradient "
                                   "checkpointing turns it off; false as a script sets model.config.use_cache = False");
  knobs.use_reentrant = r.flag_or_unset(
      "use_reentrant", "the transformers release's: true until 4.57, false from 5.0",
      "torch.utils.checkpoint's use_reentrant under gradient checkpointing (recompute: full), as "
      "gradient_checkpointing_kwargs passes it: true reruns each layer whole and holds its rerun output through "
      "its backward, false stops the rerun after the last op that saves a tensor (before the output's residual add)");
  EagerHost& h            = knobs.host;
  const double unprofiled = 43.1 / 62.0;
  h.forward_s_per_kernel =
      r.quantity("host_seconds_per_forward_kernel", QuantityKind::seconds, 30.7e-3 / 449 * unprofiled,
                 "host time per kernel launched in forward (Python modules, dispatcher, autocast; a recomputed "
                 "forward too): the GPT-2 step profiled on an H200's host, profiler time taken out");
  h.backward_s_per_kernel =
      r.quantity("host_seconds_per_backward_kernel", QuantityKind::seconds, 26.1e-3 / 755 * unprofiled,
                 "host time per kernel autograd's engine launches in backward (same source)");
  // An op's own C++ loop (ATen's grouped_mm fallback: one mm per expert) launches each
  // kernel through the dispatcher and cuBLAS alone: the same trace's aten::mm calls from
  // autograd's thread, 98 of them, median 24.87 us profiled.
  h.loop_s_per_kernel =
      r.quantity("host_seconds_per_loop_kernel", QuantityKind::seconds, 24.87e-6 * unprofiled,
                 "host time per kernel an op launches from its own C++ loop (the per-expert GEMMs of ATen's "
                 "grouped_mm fallback): the same trace's aten::mm calls, median, profiler time taken out");
  r.finish();
  return knobs;
}

class PyTorchStack : public TrainingStack {
public:
  explicit PyTorchStack(ParamReader& training) : knobs_(read_knobs(training)) {}
  EagerHost eager_host() const override { return knobs_.host; }

  // Plain DDP has no ZeRO and no offload: the Trainer's `deepspeed=` runs the same
  // modules under DeepSpeed.
  StackSwitch sharding_switch() const override
  {
    StackSwitch s{"DeepSpeed (same HF modules): ",
                  {"training.stack=deepspeed", "training.deepspeed.modules=transformers"}};
    if (knobs_.given) // DeepSpeed reads no `pytorch` section: a null one is absent
      s.overrides.push_back("training.pytorch=null");
    return s;
  }

  bool runs_liger(const ModelSpec& m) const override { return hf::liger_refusal(m).empty(); }
  bool runs_paged_optimizers() const override { return true; }
  bool runs_transformers_modules() const override { return true; }

  // PEFT's adapters on the projections HfModules names (lora_target): the Llama family's,
  // Phi-3's and Gemma's, not an MoE's experts.
  bool runs_lora(const ModelSpec& m) const override
  {
    const hf::Arch arch = hf::architecture(m);
    return !m.moe.enabled() && (arch == hf::Arch::llama || arch == hf::Arch::phi3 || arch == hf::Arch::gemma);
  }

  void check(ParamReader& r, const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    auto refuse = [&](const char* key, const std::string& why) { r.fail(key, "training.stack pytorch: " + why); };
    if (cfg.tp > 1)
      refuse("tp", "tensor parallelism is Megatron's; eager PyTorch with DDP runs tp 1 (use stack: megatron)");
    if (cfg.pp > 1)
      refuse("pp", "pipeline parallelism is Megatron's; eager PyTorch with DDP runs pp 1 (use stack: megatron)");
    if (cfg.cp > 1 || cfg.sp)
      refuse(cfg.cp > 1 ? "cp" : "sp", "context and sequence parallelism are Megatron's (use stack: megatron)");
    if (cfg.ep > 1)
      refuse("ep", "expert parallelism is Megatron's; DDP replicates every expert (ep 1)");
    if (m.moe.capacity_factor > 0 || m.moe.hot_expert_tokens > 0)
      refuse("stack", std::string("transformers' experts take every token and memwall routes them evenly (a trained "
                                  "router): model.") +
                          (m.moe.capacity_factor > 0 ? "capacity_factor" : "hot_expert_tokens") +
                          " is Megatron's (remove it, or use stack: megatron)");
    if (cfg.zero > 0)
      refuse("zero", "ZeRO shards are DeepSpeed's and FSDP's; plain DDP replicates the model states (zero: 0)");
    if (cfg.offload_optimizer != OffloadTarget::none || cfg.offload_params != OffloadTarget::none)
      refuse("offload", "offload is DeepSpeed's (ZeRO-Offload)");
    if (cfg.recompute == Recompute::selective)
      refuse("recompute", "selective recomputation is Megatron's; Hugging Face's gradient checkpointing recomputes "
                          "whole layers (recompute: full)");
    if (cfg.lora.enabled && !runs_lora(m))
      refuse("lora",
             "PEFT's LoRA is modelled for the Llama-family, Phi-3 and Gemma layers so far (" + m.name + " is not one)");
    const std::vector<std::string> modules = hf::lora_modules(hf::architecture(m));
    for (const std::string& t : cfg.lora.enabled ? cfg.lora.targets : std::vector<std::string>{})
      if (is_lora_module_name(t) && std::find(modules.begin(), modules.end(), t) == modules.end())
        refuse("lora", "targets: " + m.name + " has no module '" + t +
                           "' (every target must name one; PEFT refuses "
                           "a list none of which match); its projections: " +
                           join(modules) + ", or memwall's groups " + join(lora_target_groups()));
    if (cfg.precision == Dtype::fp8)
      refuse("precision", "fp8 needs Transformer Engine; torch.autocast runs bf16, fp16 or fp32");
    if (!cfg.flash_attention)
      refuse("flash_attention", "attn_implementation eager is modelled only where transformers forces it (gpt-oss's "
                                "sinks); SDPA (flash_attention: true) is transformers' default");
    if (cfg.optimizer != Optimizer::adam && cfg.optimizer != Optimizer::adamw && cfg.optimizer != Optimizer::adam8bit &&
        !is_paged(cfg.optimizer))
      refuse("optimizer", "the stack runs torch.optim.AdamW(fused=True) (optimizer adam or adamw) or bitsandbytes' "
                          "AdamW8bit (adam8bit) and paged AdamW (paged_adamw_32bit, paged_adamw_8bit)");
    if (cfg.liger_kernel && !hf::liger_refusal(m).empty())
      r.fail("liger_kernel", "training.liger_kernel: " + hf::liger_refusal(m));
    if (hf::architecture(m) == hf::Arch::none)
      r.fail("stack", std::string("training.stack pytorch models transformers' ") + hf::modelled_architectures() +
                          " so far: " + m.name + " is none of them");
  }

  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override
  {
    BlockPlan b = frozen(hf::model_embedding(m, hf::tokens(s), precision_of(s)), s, false);
    // Under bitsandbytes' 8-bit AdamW the Trainer registers every nn.Embedding's weight
    // for 32-bit states (create_optimizer: GlobalOptimManager.register_module_override
    // with optim_bits 32): exp_avg and exp_avg_sq in fp32 for the token table.
    if (eight_bit(s.optimizer) && b.params > 0)
      b.optimizer_bytes = b.params * 8;
    return b;
  }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    BlockPlan b = frozen(hf::model_layer(m, hf::tokens(s), precision_of(s), l), s, true);
    if (s.recompute_layers)
      hf::checkpoint_layer(b, knobs_.use_reentrant.value_or(hf::reentrant_checkpoint(s.transformers_release)));
    return b;
  }
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override
  {
    return frozen(hf::model_head(m, hf::tokens(s), precision_of(s)), s, false);
  }

  ModelStateBytes state_bytes(const TrainingConfig& cfg, const ModelSpec&) const override
  {
    ModelStateBytes b;
    // fp32 parameters under autocast; PEFT's adapters in the compute dtype where
    // get_peft_model was told autocast_adapter_dtype=False.
    b.weights   = cfg.lora.enabled ? dtype_bytes(cfg.lora.adapter_dtype) : 4;
    b.gradients = b.weights;
    // exp_avg and exp_avg_sq in the parameters' dtype; bitsandbytes' 8-bit AdamW keeps each
    // in 8 bits with an fp32 absmax per 256 (2.03 B), its 32-bit one in fp32 whatever the
    // parameters' dtype (Optimizer2State.init_state).
    b.optimizer = eight_bit(cfg.optimizer)                        ? 2 * (1 + 4.0 / 256)
                  : cfg.optimizer == Optimizer::paged_adamw_32bit ? 8
                                                                  : 2 * b.weights;
    return b;
  }

  std::string allocator() const override { return "caching"; }
  bool ddp_copies_gradients() const override { return true; }

  std::vector<OptimizerPass> optimizer_passes(const TrainingConfig& cfg, const ModelStateBytes& b) const override
  {
    return {fused_adamw_pass(cfg, b)};
  }

private:
  // fp32 parameters (4 B) whatever autocast computes in: the step's GEMM dtype.
  hf::Precision precision_of(const StepShape& s) const
  {
    hf::Precision p;
    p.param         = 4;
    p.compute_dtype = s.gemm_dtype;
    p.compute       = dtype_bytes(s.gemm_dtype);
    p.builds_cache  = knobs_.use_cache && !s.recompute_layers; // gradient checkpointing turns use_cache off
    p.liger         = s.liger_kernel;
    p.loss          = hf::loss_path(s.transformers_release);
    if (s.lora.enabled) {
      // LoRA: the model loaded in the compute dtype, every parameter frozen. QLoRA: the
      // projections in NF4, and prepare_model_for_kbit_training casts the rest (norms,
      // embeddings, lm_head) to fp32: an fp32 stream again.
      p.lora        = s.lora;
      p.param       = s.lora.nf4_base ? 4 : p.compute;
      p.base_weight = s.lora.nf4_base ? nf4_bytes : p.compute;
    }
    return p;
  }

  // NF4 with double quantisation: 4 bits a weight, an 8-bit absmax per 64 and an fp32
  // absmax per 256 of those: 4 + 8/64 + 32/(64 x 256) = 4.127 bits (Dettmers et al. 2023, section 3).
  static constexpr double nf4_bytes = (4 + 8.0 / 64 + 32.0 / (64 * 256)) / 8;

  // Under PEFT a block's own parameters are frozen (stored at the projections' width in a
  // layer, the stream's elsewhere: QLoRA leaves embeddings and lm_head unquantised) and its
  // adapters are what trains.
  BlockPlan frozen(BlockPlan b, const StepShape& s, bool layer) const
  {
    if (!s.lora.enabled)
      return b;
    const hf::Precision p = precision_of(s);
    double projections = 0, adapters = 0;
    for (const KernelPlan& k : b.kernels) {
      if (k.kclass != KernelClass::gemm || !k.runs(true))
        continue;
      const double elems = static_cast<double>(k.shape.k) * static_cast<double>(k.shape.n);
      if (k.name.find(".lora_") != std::string::npos)
        adapters += elems;
      else
        projections += elems;
    }
    b.frozen_params = b.params;
    b.frozen_bytes  = layer ? projections * p.base_weight + (b.params - projections) * p.param : b.params * p.param;
    b.params        = adapters;
    b.tensors.clear();
    return b;
  }

  EagerKnobs knobs_;
};

const bool registered = training_stack_registry().add(
    "pytorch",
    "eager PyTorch with a Hugging Face model (transformers' modules op by op; Llama-family and its MoE, gpt-oss, "
    "DeepSeek-V3, Gemma, "
    "GPT-NeoX, GPT-2, OPT): fp32 "
    "parameters under torch.autocast, 16 B per parameter and bf16 weight casts, DDP, fused AdamW",
    [](ParamReader& training) { return std::make_unique<PyTorchStack>(training); });

} // namespace
} // namespace memwall

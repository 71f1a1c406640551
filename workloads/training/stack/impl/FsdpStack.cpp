// `fsdp`: PyTorch FSDP2 (fully_shard) as torchtitan runs it (torchtitan/models/llama3:
// parallelize.py apply_fsdp, model.py), on its own Llama (TitanLlama.hpp).
//
// Every transformer block, the token embedding, and the final norm with the output layer
// are FSDP units: each rank holds 1/dp of their fp32 parameters, gradients and AdamW
// moments (16 B per parameter over dp: ZeRO-3's sharding); MixedPrecisionPolicy(param_dtype
// bf16, reduce_dtype fp32) all-gathers a unit's parameters in bf16 before its forward and
// again before its backward (resharded after forward), one unit ahead (FSDP2 prefetches
// the next all-gather: plan_gathers), and reduce-scatters its gradients in fp32 after its backward.
// torch.optim.AdamW(fused=True) steps the shards. Activation checkpointing: `full` keeps
// each layer's input, `selective` is torchtitan's per-op policy (TitanLlama.hpp).
#include "workloads/modelcode/TitanLlama.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall {
namespace {

hf::Precision bf16_params()
{
  hf::Precision p;
  p.param = p.compute = 2;
  p.compute_dtype     = Dtype::bf16;
  return p;
}

class FsdpStack : public TrainingStack {
public:
  void check(ParamReader& r, const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    auto refuse = [&](const char* key, const std::string& why) { r.fail(key, "training.stack fsdp: " + why); };
    if (cfg.tp > 1 || cfg.pp > 1 || cfg.cp > 1 || cfg.sp || cfg.ep > 1)
      refuse(cfg.tp > 1   ? "tp"
             : cfg.pp > 1 ? "pp"
             : cfg.cp > 1 ? "cp"
             : cfg.sp     ? "sp"
                          : "ep",
             "FSDP over the data-parallel ranks only so far (torchtitan's 2-D and 3-D layouts are not modelled yet)");
    if (cfg.zero != 3)
      refuse("zero", "FSDP2's fully_shard shards parameters, gradients and optimizer states: zero 3 (the default)");
    if (cfg.offload_optimizer != OffloadTarget::none || cfg.offload_params != OffloadTarget::none)
      refuse("offload", "FSDP2's CPUOffloadPolicy is not modelled yet");
    if (cfg.lora.enabled)
      refuse("lora", "torchtitan's LoRA is not modelled yet");
    if (cfg.precision != Dtype::bf16)
      refuse("precision", "torchtitan's mixed precision runs bf16 parameters (param_dtype bf16, reduce_dtype fp32)");
    if (!cfg.flash_attention)
      refuse("flash_attention", "torchtitan's attention is SDPA's flash kernel (flash_attention: true)");
    if (cfg.optimizer != Optimizer::adam && cfg.optimizer != Optimizer::adamw)
      refuse("optimizer", "torchtitan steps with torch.optim.AdamW(fused=True): optimizer adam or adamw");
    bool llama = m.norm == NormKind::rmsnorm && m.mlp == MlpKind::swiglu && !m.learned_positions && !m.moe.enabled() &&
                 !m.mla.enabled() && !m.qk_norm && m.norms_per_layer == 2 && !m.qkv_bias;
    if (!llama)
      r.fail("stack", "training.stack fsdp models torchtitan's Llama 3 (RMSNorm, rotary positions, a SwiGLU MLP, no "
                      "biases, no MoE): " +
                          m.name + " is not one");
  }

  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override
  {
    return titan::embedding(m, hf::tokens(s), bf16_params());
  }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    return titan::layer(m, hf::tokens(s), bf16_params(), l, true);
  }
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override
  {
    return titan::head(m, hf::tokens(s), bf16_params());
  }

  ModelStateBytes state_bytes(const TrainingConfig&, const ModelSpec&) const override
  {
    ModelStateBytes b;
    b.weights   = 4; // the fp32 shard
    b.gradients = 4; // reduce_dtype fp32: the reduce-scattered shard
    b.optimizer = 8; // exp_avg and exp_avg_sq
    b.gathered  = 2; // param_dtype bf16
    return b;
  }

  int default_zero() const override { return 3; }
  std::vector<int> zero_stages() const override { return {3}; } // fully_shard
  std::string allocator() const override { return "caching"; }

  std::vector<OptimizerPass> optimizer_passes(const TrainingConfig& cfg, const ModelStateBytes& b) const override
  {
    return {fused_adamw_pass(cfg, b)};
  }

  // FSDP2's unshard and reshard (torch/distributed/fsdp/_fully_shard): a unit's
  // pre-forward hook all-gathers its parameters and its post-forward hook frees them
  // (reshard_after_forward=True, as torchtitan's apply_fsdp shards the embedding and the
  // blocks without pp; here the final norm and output reshard too, as under its policy
  // "always"); its pre-backward hook gathers them again, its post-backward hook frees
  // them. The next unit's all-gather runs one ahead on FSDP2's all-gather stream:
  // issued by the CPU while the GPU still computes this unit in forward (implicit
  // prefetch, _fsdp_param_group.py), by _backward_prefetch in backward. That is the
  // generic window at depth 1, training.zero_prefetch's default; a deeper one is FSDP2's
  // explicit prefetch (set_modules_to_forward_prefetch / set_modules_to_backward_prefetch
  // with the next k units), which torchtitan's Llama leaves unset; 0 waits for the unit
  // before to finish, as FSDP2 itself never does.
  GatherPlan plan_gathers(const std::vector<ParamUse>& uses, const TrainingConfig& cfg) const override
  {
    return prefetched_gathers(uses, static_cast<size_t>(cfg.zero_prefetch));
  }
};

const bool registered = training_stack_registry().add(
    "fsdp",
    "PyTorch FSDP2 as torchtitan runs its Llama: fp32 shards of weights, gradients and AdamW states (16 B per "
    "parameter over dp), each block all-gathered in bf16 one ahead and resharded after forward, gradients "
    "reduce-scattered in fp32, per-op selective activation checkpointing",
    [](ParamReader&) { return std::make_unique<FsdpStack>(); });

} // namespace
} // namespace memwall

// `fsdp`: PyTorch FSDP2 (fully_shard) as torchtitan runs it (torchtitan/models/llama3:
// parallelize.py apply_fsdp, model.py), on its own Llama (TitanLlama.hpp), with its
// tensor parallelism (apply_tp: sequence-parallel norms, column- and row-parallel linears,
// TitanLlama.hpp), context parallelism (K and V all-gathered, as the Llama 3 paper and
// torch's allgather rotate method run it; FSDP over dp x cp) and pipeline stages
// (pipeline_llama: fully_shard on each stage's chunks).
//
// Every transformer block, the token embedding, and the final norm with the output layer
// are FSDP units: each rank holds 1/dp of their fp32 parameters, gradients and AdamW
// moments (16 B per parameter over dp: ZeRO-3's sharding); MixedPrecisionPolicy(param_dtype
// bf16, reduce_dtype fp32) all-gathers a unit's parameters in bf16 before its forward and
// again before its backward (resharded after forward), one unit ahead (FSDP2 prefetches
// the next all-gather: plan_gathers), and reduce-scatters its gradients in fp32 after its
// backward. Under pipeline stages a unit is gathered once a step and its gradients summed
// unsharded in fp32 and reduce-scattered with its chunk's others right after the chunk's
// last backward (plan_gathers, accumulates_unsharded). torch.optim.AdamW(fused=True)
// steps the shards. Activation checkpointing: `full` keeps each layer's input,
// `selective` is torchtitan's per-op policy (TitanLlama.hpp).
#include "workloads/modelcode/TitanLlama.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>
#include <map>

namespace memwall {
namespace {

titan::Split split(const StepShape& s) { return {static_cast<double>(s.tp), static_cast<double>(s.cp)}; }

hf::Precision bf16_params()
{
  hf::Precision p;
  p.param = p.compute = 2;
  p.compute_dtype     = Dtype::bf16;
  return p;
}

// torchtitan's own knobs, by its names (the `fsdp` section).
struct TitanKnobs {
  titan::Lowering lowering;
};

TitanKnobs read_knobs(ParamReader& training)
{
  TitanKnobs k;
  ParamReader r = training.section("fsdp", "torchtitan's settings, by its names (training.stack fsdp)");
  if (r.flag("compile", false,
             "torchtitan's compile.enable (--training.compile): each transformer block through torch.compile, "
             "Inductor fusing the pointwise ops between its matmuls and SDPA into one kernel a region (the residual "
             "add with the next norm, GQA's repeat of k with rotary's cast back, SiLU with the product, the gradient "
             "sums with "
             "the norms' backward); the embedding, output and loss stay eager (apply_compile, as of the "
             "performance tables of December 2024)"))
    k.lowering.inductor = true;
  k.lowering.float8   = r.choice("float8", "none", {"none", "tensorwise"},
                                 "torchtitan's Float8 training (enable_float8_linear; later converters [\"float8\"] "
                                   "with recipe_name tensorwise): torchao's Float8Linear in every block Linear, "
                                   "dynamic tensorwise scaling, FP8 GEMMs with the casts and transposes around "
                                   "them, under tp its gathers in FP8; needs compile (rowwise recipes and FSDP's FP8 "
                                   "weight all-gathers not modelled)") == "tensorwise";
  k.lowering.async_tp = r.flag("async_tp", false,
                               "torchtitan's enable_async_tensor_parallel: torch's micro-pipeline TP (symmetric "
                               "memory, copy engines) runs each tp all-gather beside the GEMM it feeds and each "
                               "row-parallel GEMM in tp chunks beside their reduce-scatters; needs compile and tp > 1");
  // The PyTorch release it runs on, for what differs between releases in its eager ops.
  const std::string torch   = r.choice("torch", "2.11", {"2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11"},
                                       "the PyTorch release torchtitan runs on: before 2.9 eager RMSNorm is composite "
                                         "(the stream cast to fp32, eight kernels forward, nineteen backward: torchtitan's "
                                         "own RMSNorm of 2024 and nn.RMSNorm alike); from 2.9 ATen's fused kernel");
  k.lowering.fused_rms_norm = torch == "2.9" || torch == "2.10" || torch == "2.11";
  r.finish();
  return k;
}

class FsdpStack : public TrainingStack {
public:
  explicit FsdpStack(ParamReader& training) : k_(read_knobs(training)) {}

  void check(ParamReader& r, const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    auto refuse = [&](const char* key, const std::string& why) { r.fail(key, "training.stack fsdp: " + why); };
    // parallelize.py applies fully_shard only where dp_shard or cp > 1; else the model
    // trains in fp32 under autocast, which this stack does not model.
    if (cfg.replicas() == 1)
      refuse("dp", "with dp x cp = 1 torchtitan applies no FSDP (fp32 parameters under autocast: stack pytorch "
                   "models that): dp x cp must be more than 1");
    // parallelize.py apply_tp: the norms are always SequenceParallel.
    if (cfg.tp > 1 && !cfg.sp)
      refuse("sp", "torchtitan's tensor parallelism runs the norms SequenceParallel: set sp: true");
    if (cfg.tp > 1 && (m.heads % cfg.tp != 0 || m.kv_heads % cfg.tp != 0))
      refuse("tp", "torchtitan splits attention by heads: tp = " + std::to_string(cfg.tp) + " must divide the " +
                       std::to_string(m.heads) + " query and " + std::to_string(m.kv_heads) + " key/value heads");
    if (cfg.zero != 3)
      refuse("zero", "FSDP2's fully_shard shards parameters, gradients and optimizer states: zero 3 (the default)");
    if (cfg.offload_optimizer != OffloadTarget::none || cfg.offload_params != OffloadTarget::none)
      refuse("offload", "FSDP2's CPUOffloadPolicy is not modelled yet");
    if (cfg.lora.enabled)
      refuse("lora", "torchtitan's LoRA is not modelled yet");
    if (k_.lowering.float8 && !k_.lowering.inductor)
      r.fail("fsdp", "training.fsdp.float8 is modelled under torch.compile only (eager, each cast is a dozen "
                     "kernels, which torchtitan does not recommend): set compile: true");
    if (k_.lowering.async_tp && (!k_.lowering.inductor || cfg.tp == 1))
      r.fail("fsdp", "training.fsdp.async_tp is torch's micro-pipeline TP, an Inductor pass over tp's collectives: "
                     "it needs compile: true and tp > 1, as torchtitan asserts");
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
    return titan::embedding(m, hf::tokens(s), bf16_params(), split(s));
  }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    return titan::layer(m, hf::tokens(s), bf16_params(), l, true, split(s), k_.lowering);
  }
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override
  {
    return titan::head(m, hf::tokens(s), bf16_params(), split(s), k_.lowering);
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

  // torchtitan applies fully_shard to each pipeline stage's model chunk (parallelize.py
  // after pipeline_llama), and torch.distributed.pipelining's schedules turn gradient
  // sync off and keep the parameters unsharded until a chunk's last backward of the step
  // (stage.py backward_maybe_with_nosync: set_requires_gradient_sync and
  // set_reshard_after_backward only for the last micro-batch).
  bool shards_with_pipeline() const override { return true; }
  // pipeline_llama's generate_split_points when no pipeline_parallel_split_points are given.
  bool splits_stages_as_torchtitan() const override { return true; }
  bool accumulates_unsharded(const TrainingConfig& cfg) const override { return cfg.pp > 1; }

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
  //
  // With pipeline stages torchtitan does not reshard after forward
  // (get_fsdp_reshard_after_forward_policy "default": "for PP, by default do not reshard
  // after forward to avoid per-microbatch all-gathers") and the schedule does not reshard
  // after backward until the last micro-batch: a unit is all-gathered once a step, at its
  // first forward, issued `zero_prefetch` uses ahead once the compute before that use is
  // done (nothing is freed to bound it: FSDP2's copy-in waits for the compute stream to
  // have taken the all-gather before it), and held until its chunk's last backward ends
  // (stage.py: post_backward of every unit of the chunk once its last backward has run).
  GatherPlan plan_gathers(const std::vector<ParamUse>& uses, const TrainingConfig& cfg) const override
  {
    const size_t depth = static_cast<size_t>(cfg.zero_prefetch);
    if (cfg.pp == 1)
      return prefetched_gathers(uses, depth);
    GatherPlan plan(uses.size());
    std::map<int64_t, size_t> first, last; // per block: its uses' first and last
    std::map<size_t, size_t> slot_end;     // per slot: its last use
    for (size_t j = 0; j < uses.size(); ++j) {
      slot_end[uses[j].slot] = j;
      if (uses[j].elements > 0) {
        first.try_emplace(uses[j].block, j);
        last[uses[j].block] = j;
      }
    }
    size_t issued = 0;
    for (size_t j = 0; j < uses.size(); ++j) {
      if (uses[j].elements <= 0)
        continue;
      UseGather& g = plan[j];
      g.buffer     = first.at(uses[j].block);
      if (g.buffer != j)
        continue;
      g.issued_at     = std::max(issued, j > depth ? j - depth : 0);
      g.freed_after   = slot_end.at(uses[last.at(uses[j].block)].slot);
      g.after_compute = true;
      issued          = g.issued_at;
    }
    return plan;
  }

private:
  TitanKnobs k_;
};

const bool registered = training_stack_registry().add(
    "fsdp",
    "PyTorch FSDP2 as torchtitan runs its Llama: fp32 shards of weights, gradients and AdamW states (16 B per "
    "parameter over dp), each block all-gathered in bf16 one ahead and resharded after forward, gradients "
    "reduce-scattered in fp32, per-op selective activation checkpointing; with torchtitan's tensor parallelism "
    "(sp), all-gather context parallelism and pipeline stages (each unit gathered once a step, fp32 gradients "
    "summed unsharded and reduce-scattered after the last micro-batch); torch.compile's fusions (the `fsdp` "
    "section, torchtitan's knobs)",
    [](ParamReader& training) { return std::make_unique<FsdpStack>(training); });

} // namespace
} // namespace memwall

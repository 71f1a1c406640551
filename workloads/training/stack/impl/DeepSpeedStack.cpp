// `deepspeed`: DeepSpeed's ZeRO (deepspeed/runtime/zero: stage_1_and_2.py, stage3.py,
// partition_parameters.py) driving Megatron-DeepSpeed's GPT, whose kernels are
// Megatron-LM's (BlockKernels.cpp), or with `modules: transformers` a Hugging Face
// model as the Trainer hands it over: transformers' modules op by op (HfModel.hpp) with
// the weights in the compute dtype (the engine casts the model; no autocast). Model states as Megatron's mixed precision (16-bit
// weights and gradients, fp32 master weights and Adam states: 16 B per parameter),
// sharded by the ZeRO stage (DeepSpeed's default: 0).
//
// What differs from Megatron is how ZeRO moves them (the `deepspeed` section's knobs,
// by DeepSpeed's names):
//   ZeRO-3 hooks every module: before its forward and backward the module's parameters
//   are all-gathered one by one, those of at most stage3_param_persistence_threshold
//   elements excepted (held whole on every rank); after it they are released unless
//   used again within stage3_max_reuse_distance gathered elements (the parameter
//   coordinator's trace). Each block therefore lists its parameter tensors
//   (BlockPlan::tensors) and the stack plans which each use gathers (plan_fetches), which the
//   generator emits (ParamGather, TensorCollectives).
//   overlap_comm (DeepSpeed: true for stage 3, false otherwise; false in 2021) puts the
//   gathers and the gradient reductions on their own streams; off, they run on the
//   compute stream, one after another.
//   Gradients are reduced in reduce_bucket_size buckets (stage 0: after backward, as
//   the engine's allreduce_gradients; stages 1-3: from backward's hooks).
// The optimizer: gradients cast to fp32, their norm, the fused Adam over the fp32
// partition, and the partition copied back into the 16-bit weights.
#include "workloads/modelcode/HfModel.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <map>
#include <optional>

namespace memwall {
namespace {

double tp_of(const StepShape& s) { return static_cast<double>(s.tp); }

// Megatron-DeepSpeed's GPT layer, module by module: input norm, fused QKV, attention
// output, post-attention norm, h -> 4h (gate and up fused under SwiGLU), 4h -> h; the
// row-parallel layers' biases are whole on every tp rank.
std::vector<double> layer_tensors(const ModelSpec& m, const StepShape& s, double params)
{
  double h = static_cast<double>(m.hidden), t = tp_of(s);
  double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  double o = static_cast<double>(m.attn_out_dim()), f = static_cast<double>(m.ffn_hidden);
  double up = m.mlp == MlpKind::swiglu ? 2 * f : f;
  bool ln   = m.norm == NormKind::layernorm;
  std::vector<double> v;
  auto norm = [&] {
    v.push_back(h);
    if (ln)
      v.push_back(h);
  };
  auto linear = [&](double in, double out, bool bias, double bias_elems) {
    v.push_back(in * out / t);
    if (bias)
      v.push_back(bias_elems);
  };
  norm();
  linear(h, q + 2 * kv, m.qkv_bias, (q + 2 * kv) / t);
  linear(o, h, m.proj_bias, h);
  norm();
  linear(h, up, m.mlp_bias, up / t);
  linear(f, h, m.mlp_bias, h);
  double listed = 0;
  for (double e : v)
    listed += e;
  if (params - listed > 0.5) // q/k norms, attention sinks, extra norms: small tensors
    v.push_back(params - listed);
  return v;
}

// The word table (vocabulary-parallel) and Megatron's learned positions.
std::vector<double> embedding_tensors(const ModelSpec& m, const StepShape& s)
{
  std::vector<double> v{static_cast<double>(m.vocab) * m.hidden / tp_of(s)};
  if (m.learned_positions)
    v.push_back(static_cast<double>(m.max_seq_len + m.position_offset) * m.hidden);
  return v;
}

// The final norm (weight, and bias for LayerNorm) and an untied output layer.
std::vector<double> head_tensors(const ModelSpec& m, const StepShape& s)
{
  std::vector<double> v;
  if (m.final_norm)
    v.push_back(m.hidden);
  if (m.final_norm && m.norm == NormKind::layernorm)
    v.push_back(m.hidden);
  if (!m.tied_embeddings)
    v.push_back(static_cast<double>(m.vocab) * m.hidden / tp_of(s));
  return v;
}

BlockPlan with_tensors(BlockPlan b, std::vector<double> tensors)
{
  b.tensors = std::move(tensors);
  return b;
}

// DeepSpeed's zero_optimization knobs, under DeepSpeed's own names where it has them
// (deepspeed/runtime/zero/config.py), read from the `deepspeed` section.
struct DeepSpeedKnobs {
  bool transformers = false;        // modules: transformers' (a Hugging Face model) instead of Megatron's GPT
  std::optional<bool> overlap_comm; // collectives on their own streams; unset: true for ZeRO-3 only
  double prefetch_numel    = 5e7;   // stage3_prefetch_bucket_size: parameters gathered ahead of use
  double max_live_numel    = 1e9;   // stage3_max_live_parameters: gathered parameters alive at once
  double max_reuse_numel   = 1e9;   // stage3_max_reuse_distance: kept gathered if used again within this
  double persistence_numel = 1e5;   // stage3_param_persistence_threshold: smaller parameters held whole
  TensorCalls calls;                // reduce_bucket_size, per_parameter_collectives and their host costs

  bool overlaps(const TrainingConfig& cfg) const { return overlap_comm.value_or(cfg.zero == 3); }
};

DeepSpeedKnobs read_knobs(ParamReader& training)
{
  DeepSpeedKnobs d;
  ParamReader r = training.section("deepspeed", "DeepSpeed's zero_optimization settings, by its names (training.stack "
                                                "deepspeed)");
  d.transformers =
      r.choice("modules", "megatron", {"megatron", "transformers"},
               "whose model code DeepSpeed drives: Megatron-DeepSpeed's GPT (fused kernels) or a Hugging Face model's "
               "transformers modules (the Trainer's; weights in the compute dtype, no autocast)") == "transformers";
  d.overlap_comm   = r.flag_or_unset("overlap_comm", "zero 3: true, else false",
                                     "gather parameters and reduce gradients on their own streams, overlapping compute "
                                       "(as DeepSpeed; false in its 2021 releases); false: on the compute stream");
  d.prefetch_numel = r.number("stage3_prefetch_bucket_size", d.prefetch_numel,
                              "ZeRO-3: parameter elements all-gathered ahead of their use (memwall: with overlap_comm, "
                              "any positive value gathers the next block during this one; 0: no prefetch)",
                              0, 1e13);
  d.max_live_numel = r.number("stage3_max_live_parameters", d.max_live_numel,
                              "ZeRO-3: gathered parameter elements alive at once (read for DeepSpeed's config; "
                              "memwall's prefetch is one block ahead whatever it says)",
                              0, 1e13);
  d.max_reuse_numel =
      r.number("stage3_max_reuse_distance", d.max_reuse_numel,
               "ZeRO-3: a parameter used again within this many gathered elements is not released", 0, 1e13);
  d.persistence_numel =
      r.number("stage3_param_persistence_threshold", d.persistence_numel,
               "ZeRO-3: parameters of at most this many elements are held whole on every rank", 0, 1e13);
  d.calls.reduce_bucket_numel = r.number("reduce_bucket_size", d.calls.reduce_bucket_numel,
                                         "gradient elements reduced in one collective", 1, 1e13);
  d.calls.per_parameter =
      r.flag("per_parameter_collectives", false,
             "DeepSpeed 0.3-0.4 on PyTorch <= 1.9: one all-gather and one reduce-scatter per parameter, over "
             "lists of one view per rank (built in Python, copied by PyTorch into or out of a flat buffer)");
  d.calls.host_seconds_per_view = r.quantity("host_seconds_per_view", QuantityKind::seconds, 5.3e-6,
                                             "per_parameter_collectives: host time to build one rank's view "
                                             "(aten::narrow, median of the H100 HF trace)");
  d.calls.host_seconds_per_copy = r.quantity("host_seconds_per_copy", QuantityKind::seconds, 8.9e-6,
                                             "per_parameter_collectives: host time to issue one rank's copy "
                                             "(cudaMemcpyAsync device to device, median of the A100 2-rank NCCL "
                                             "trace)");
  r.finish();
  return d;
}

class DeepSpeedStack : public TrainingStack {
public:
  explicit DeepSpeedStack(ParamReader& training) : d_(read_knobs(training)) {}

  void adjust(const ParamReader& r, TrainingConfig& cfg) const override
  {
    // Buckets of reduce_bucket_size gradient elements; stage 0 reduces them after
    // backward (the engine's allreduce_gradients), stages 1-3 from backward's hooks.
    if (!r.has("bucket_bytes"))
      cfg.bucket_bytes = d_.calls.reduce_bucket_numel * (cfg.mixed_precision() ? 2.0 : 4.0);
    if (!r.has("overlap_grad_reduce"))
      cfg.overlap_grad_reduce = cfg.zero > 0;
    // stage3_prefetch_bucket_size elements ahead: at least the next module. The blocks
    // are then gathered in the generic window at that depth (TrainingStack::plan_gathers),
    // tensor by tensor as plan_fetches says.
    if (!r.has("zero_prefetch"))
      cfg.zero_prefetch = d_.overlaps(cfg) && d_.prefetch_numel > 0 ? 1 : 0;
  }

  bool runs_liger(const ModelSpec& m) const override { return d_.transformers && hf::liger_refusal(m).empty(); }
  bool runs_transformers_modules() const override { return d_.transformers; }

  void check(ParamReader& r, const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    if (m.moe.enabled())
      r.fail("stack",
             "training.stack deepspeed: DeepSpeed-MoE is not modelled yet; " + m.name + " is a mixture of experts");
    if (m.mla.enabled())
      r.fail("stack", "training.stack deepspeed: multi-head latent attention is not modelled yet (" + m.name + ")");
    if (cfg.cp > 1)
      r.fail("cp",
             "training.stack deepspeed: context parallelism is Megatron-LM's (DeepSpeed's Ulysses is not modelled)");
    if (cfg.liger_kernel && !d_.transformers)
      r.fail("liger_kernel", "training.liger_kernel: Liger replaces transformers' modules "
                             "(training.deepspeed.modules: transformers)");
    if (!d_.transformers)
      return;
    if (cfg.liger_kernel && !hf::liger_refusal(m).empty())
      r.fail("liger_kernel", "training.liger_kernel: " + hf::liger_refusal(m));
    auto refuse = [&](const char* key, const std::string& why) {
      r.fail(key, "training.deepspeed.modules transformers: " + why);
    };
    if (cfg.tp > 1 || cfg.pp > 1 || cfg.sp)
      refuse(cfg.tp > 1 ? "tp" : cfg.pp > 1 ? "pp" : "sp", "a Hugging Face model runs data parallel only (tp 1, pp 1)");
    if (cfg.recompute == Recompute::selective)
      refuse("recompute", "Hugging Face's gradient checkpointing recomputes whole layers (recompute: full)");
    if (cfg.lora.enabled)
      refuse("lora", "LoRA (PEFT) is not modelled for transformers' modules yet");
    if (cfg.precision == Dtype::fp8)
      refuse("precision", "DeepSpeed's engine runs a Hugging Face model in bf16, fp16 or fp32");
    if (!cfg.flash_attention)
      refuse("flash_attention", "the eager attention implementation is not modelled yet (SDPA: flash_attention true)");
    if (hf::architecture(m) == hf::Arch::none)
      r.fail("stack", std::string("training.deepspeed.modules transformers models transformers' ") +
                          hf::modelled_architectures() + " so far: " + m.name + " is none of them");
  }

  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override
  {
    return d_.transformers ? with_tensors(hf::model_embedding(m, hf::tokens(s), precision(s)), hf::embedding_tensors(m))
                           : with_tensors(embedding_block(m, s), embedding_tensors(m, s));
  }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    if (d_.transformers) {
      BlockPlan b = hf::model_layer(m, hf::tokens(s), precision(s), l);
      if (s.recompute_layers) // the Trainer's gradient checkpointing, as the release runs it
        hf::checkpoint_layer(b, hf::reentrant_checkpoint(s.transformers_release));
      return with_tensors(b, hf::layer_tensors(m));
    }
    BlockPlan b = transformer_layer_block(m, s, l);
    return with_tensors(b, layer_tensors(m, s, b.params));
  }
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override
  {
    return d_.transformers ? with_tensors(hf::model_head(m, hf::tokens(s), precision(s)), hf::head_tensors(m))
                           : with_tensors(head_block(m, s), head_tensors(m, s));
  }

  ModelStateBytes state_bytes(const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    return master_weight_state_bytes(cfg, m);
  }

  bool serial_collectives(const TrainingConfig& cfg) const override { return !d_.overlaps(cfg); }
  std::vector<int> zero_stages() const override { return {0, 1, 2, 3}; }
  bool offloads_states() const override { return true; }
  // DeepSpeed runs in PyTorch: its tensors come from the caching allocator.
  std::string allocator() const override { return "caching"; }

  std::vector<OptimizerPass> optimizer_passes(const TrainingConfig& cfg, const ModelStateBytes& b) const override
  {
    // stage_1_and_2.py / stage3.py step(): the partition's 16-bit gradients cast into
    // the fp32 master's .grad, their norm (clipping, overflow check), the fused Adam,
    // the fp32 partition copied into the 16-bit one; gradients set to None (no fill).
    const double g = b.gradients;
    std::vector<OptimizerPass> p;
    bool mixed = cfg.mixed_precision();
    if (mixed)
      p.push_back({"grads_to_fp32", 1, g + 4, true, false, false});
    p.push_back({"grad_norm", 2, mixed ? 4.0 : g, !mixed, mixed, false});
    double weights = mixed ? 0.0 : 2 * b.weights;
    p.push_back({"optimizer_step", optimizer_flops_per_param(cfg.optimizer), 4 + 2 * b.optimizer + weights, !mixed,
                 true, !mixed});
    if (mixed)
      p.push_back({"copy_to_weights", 1, 4 + b.weights, false, true, true});
    return p;
  }

  // stage3.py's PartitionedParameterCoordinator: a tensor of at most
  // stage3_param_persistence_threshold elements is held whole on every rank and never
  // gathered; after a module runs, its tensors are released unless the module runs again
  // within stage3_max_reuse_distance gathered elements (in the trace of module uses over
  // the step): under full recompute the last modules' weights stay gathered from their
  // recomputed forward to their backward.
  double persistent_elements(const std::vector<double>& tensors) const override
  {
    double p = 0;
    for (double e : tensors)
      if (e <= d_.persistence_numel)
        p += e;
    return p;
  }

  FetchPlan plan_fetches(const std::vector<ParamUse>& uses) const override
  {
    // The step's trace of tensor uses: forward in order; backward in reverse, after a
    // forward in order when the layer is recomputed whole.
    struct Use {
      size_t use;
      size_t tensor;
      double elements;
      int64_t key; // block * tensors + tensor
    };
    std::vector<Use> trace;
    for (size_t j = 0; j < uses.size(); ++j) {
      const std::vector<double>& tensors = *uses[j].tensors;
      auto add                           = [&](size_t t) {
        if (tensors[t] > d_.persistence_numel)
          trace.push_back({j, t, tensors[t], uses[j].block * 4096 + static_cast<int64_t>(t)});
      };
      if (uses[j].forward || uses[j].recomputed)
        for (size_t t = 0; t < tensors.size(); ++t)
          add(t);
      if (!uses[j].forward)
        for (size_t t = tensors.size(); t-- > 0;)
          add(t);
    }
    // Elements gathered before each entry; the next entry of the same tensor.
    std::vector<double> before(trace.size() + 1, 0.0);
    for (size_t k = 0; k < trace.size(); ++k)
      before[k + 1] = before[k] + trace[k].elements;
    std::vector<size_t> next(trace.size(), trace.size());
    std::map<int64_t, size_t> seen;
    for (size_t k = trace.size(); k-- > 0;) {
      auto it = seen.find(trace[k].key);
      if (it != seen.end())
        next[k] = it->second;
      seen[trace[k].key] = k;
    }
    FetchPlan fetches(uses.size());
    std::map<int64_t, bool> gathered;
    for (size_t k = 0; k < trace.size(); ++k) {
      const Use& u = trace[k];
      if (!gathered[u.key])
        fetches[u.use].emplace_back(u.tensor, u.elements);
      // Released unless used again within the reuse distance (gathered elements between).
      gathered[u.key] = next[k] < trace.size() && before[next[k]] - before[k + 1] < d_.max_reuse_numel;
    }
    return fetches;
  }

  TensorCalls tensor_calls() const override { return d_.calls; }

private:
  // The engine casts the model to the compute dtype (bf16 or fp16 config; fp32 else).
  hf::Precision precision(const StepShape& s) const
  {
    hf::Precision p;
    p.liger         = s.liger_kernel;
    p.loss          = hf::loss_path(s.transformers_release);
    p.compute_dtype = s.gemm_dtype;
    p.param = p.compute = dtype_bytes(s.gemm_dtype);
    p.builds_cache      = !s.recompute_layers; // use_cache, off under gradient checkpointing
    return p;
  }
  DeepSpeedKnobs d_;
};

const bool registered = training_stack_registry().add(
    "deepspeed",
    "DeepSpeed's ZeRO on Megatron-DeepSpeed's GPT: Megatron's kernels and 16 B per parameter; ZeRO-3 gathers "
    "parameters one by one per module (small ones persist), keeps them within a reuse distance, and runs its "
    "collectives on the compute stream unless overlap_comm (the `deepspeed` section, DeepSpeed's knobs)",
    [](ParamReader& training) { return std::make_unique<DeepSpeedStack>(training); });

} // namespace
} // namespace memwall

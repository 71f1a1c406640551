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
//   (BlockPlan::tensors) and the generator gathers them apart (DeepSpeedFetch.cpp).
//   overlap_comm (DeepSpeed: true for stage 3, false otherwise; false in 2021) puts the
//   gathers and the gradient reductions on their own streams; off, they run on the
//   compute stream, one after another.
//   Gradients are reduced in reduce_bucket_size buckets (stage 0: after backward, as
//   the engine's allreduce_gradients; stages 1-3: from backward's hooks).
// The optimizer: gradients cast to fp32, their norm, the fused Adam over the fp32
// partition, and the partition copied back into the 16-bit weights.
#include "workloads/training/stack/HfModel.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

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

class DeepSpeedStack : public TrainingStack {
public:
  void configure(const TrainingConfig& cfg) override { transformers_ = cfg.deepspeed.modules == "transformers"; }

  void adjust(const ParamReader& r, TrainingConfig& cfg) const override
  {
    // Buckets of reduce_bucket_size gradient elements; stage 0 reduces them after
    // backward (the engine's allreduce_gradients), stages 1-3 from backward's hooks.
    if (!r.has("bucket_bytes"))
      cfg.bucket_bytes = cfg.deepspeed.reduce_bucket_numel * (cfg.mixed_precision() ? 2.0 : 4.0);
    if (!r.has("overlap_grad_reduce"))
      cfg.overlap_grad_reduce = cfg.zero > 0;
    if (!r.has("zero_prefetch")) // stage3_prefetch_bucket_size elements ahead: at least the next module
      cfg.zero_prefetch = cfg.deepspeed.overlap_comm && cfg.deepspeed.prefetch_numel > 0 ? 1 : 0;
  }

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
    if (!transformers_)
      return;
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
      r.fail("stack", "training.deepspeed.modules transformers models transformers' Llama-family decoders and "
                      "GPT-2 so far: " +
                          m.name + " is neither");
  }

  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override
  {
    return transformers_ ? with_tensors(hf::model_embedding(m, hf::tokens(s), precision(s)), hf::embedding_tensors(m))
                         : with_tensors(embedding_block(m, s), embedding_tensors(m, s));
  }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    if (transformers_)
      return with_tensors(hf::model_layer(m, hf::tokens(s), precision(s), l), hf::layer_tensors(m));
    BlockPlan b = transformer_layer_block(m, s, l);
    return with_tensors(b, layer_tensors(m, s, b.params));
  }
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override
  {
    return transformers_ ? with_tensors(hf::model_head(m, hf::tokens(s), precision(s)), hf::head_tensors(m))
                         : with_tensors(head_block(m, s), head_tensors(m, s));
  }

  ModelStateBytes state_bytes(const TrainingConfig& cfg, const ModelSpec& m) const override
  {
    return master_weight_state_bytes(cfg, m);
  }

  bool serial_collectives(const TrainingConfig& cfg) const override { return !cfg.deepspeed.overlap_comm; }
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

private:
  // The engine casts the model to the compute dtype (bf16 or fp16 config; fp32 else).
  static hf::Precision precision(const StepShape& s)
  {
    hf::Precision p;
    p.compute_dtype = s.gemm_dtype;
    p.param = p.compute = dtype_bytes(s.gemm_dtype);
    return p;
  }
  bool transformers_ = false;
};

const bool registered = training_stack_registry().add(
    "deepspeed",
    "DeepSpeed's ZeRO on Megatron-DeepSpeed's GPT: Megatron's kernels and 16 B per parameter; ZeRO-3 gathers "
    "parameters one by one per module (small ones persist), keeps them within a reuse distance, and runs its "
    "collectives on the compute stream unless overlap_comm (the `deepspeed` section, DeepSpeed's knobs)",
    [] { return std::make_unique<DeepSpeedStack>(); });

} // namespace
} // namespace memwall

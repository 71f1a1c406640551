#include "workloads/modelcode/HfModel.hpp"

#include <algorithm>

namespace memwall::hf {

namespace {

// The modules transformers builds for the model: its family's, with the options its
// configuration class has (what memwall's ModelSpec can say otherwise is refused).
bool is_gpt_oss(const ModelSpec& m)
{
  return m.family == "gpt_oss" && m.attention_sinks && m.moe.enabled() && m.moe.expert_biases && m.moe.router_bias &&
         m.moe.first_k_dense == 0 && m.moe.layer_freq == 1 && m.moe.shared_experts == 0 && m.moe.expert_groups == 0 &&
         !m.mla.enabled() && m.norms_per_layer == 2 && m.norm == NormKind::rmsnorm && m.mlp == MlpKind::swiglu &&
         !m.learned_positions && !m.fused_projections && !m.qk_norm;
}

bool is_deepseek(const ModelSpec& m)
{
  return m.family == "deepseek_v3" && m.mla.enabled() && !m.attention_sinks && m.moe.enabled() &&
         !m.moe.expert_biases && m.moe.layer_freq == 1 && m.moe.shared_experts <= 1 && !m.moe.shared_expert_gate &&
         m.norms_per_layer == 2 && m.norm == NormKind::rmsnorm && m.mlp == MlpKind::swiglu && !m.learned_positions &&
         !m.fused_projections && !m.qk_norm && !m.qkv_bias && !m.proj_bias && !m.mlp_bias;
}

} // namespace

Arch architecture(const ModelSpec& m)
{
  if (is_gpt_oss(m))
    return Arch::gpt_oss;
  if (is_deepseek(m))
    return Arch::deepseek;
  if (m.mla.enabled() || m.attention_sinks)
    return Arch::none;
  // Experts as Mixtral, Qwen2-MoE and Qwen3-MoE run them (HfMoe.cpp) in a Llama layer,
  // every layer sparse: not biased experts, a group-limited router or dense first layers
  // there (gpt-oss's and DeepSeek's, above), nor experts on a model transformers builds dense.
  if (m.moe.enabled() &&
      ((m.family != "mixtral" && m.family != "qwen2_moe" && m.family != "qwen3_moe") || m.moe.expert_biases ||
       m.moe.router_bias || m.moe.expert_groups > 0 || m.moe.first_k_dense > 0 || m.moe.layer_freq != 1 ||
       (m.moe.shared_experts > 0 && !m.moe.shared_expert_gate) || m.moe.shared_experts > 1 || m.fused_projections ||
       m.norms_per_layer != 2 || m.norm != NormKind::rmsnorm || m.mlp != MlpKind::swiglu || m.learned_positions))
    return Arch::none;
  if (m.norms_per_layer == 4 && m.norm == NormKind::rmsnorm && m.mlp == MlpKind::swiglu && !m.learned_positions &&
      !m.fused_projections)
    return Arch::gemma;
  if (m.norms_per_layer != 2)
    return Arch::none;
  if (m.norm == NormKind::rmsnorm && m.mlp == MlpKind::swiglu && !m.learned_positions)
    return m.fused_projections ? Arch::phi3 : Arch::llama;
  if (m.family == "gpt2" && m.norm == NormKind::layernorm && m.mlp == MlpKind::gelu && m.learned_positions)
    return Arch::gpt2;
  if (m.family == "opt" && m.norm == NormKind::layernorm && m.learned_positions)
    return Arch::opt;
  if (m.norm == NormKind::layernorm && m.mlp == MlpKind::gelu && !m.learned_positions && m.kv_heads == m.heads)
    return Arch::neox;
  return Arch::none;
}

NormFn final_norm_of(const ModelSpec& m)
{
  if (architecture(m) == Arch::gemma)
    return gemma_final_norm;
  return m.norm == NormKind::rmsnorm ? rms_norm : layer_norm;
}

std::string liger_refusal(const ModelSpec& m)
{
  if (architecture(m) != Arch::llama || m.moe.enabled() || m.qk_norm)
    return "Liger's kernels are modelled for Llama-family decoders without experts or head norms (Llama, Mistral, "
           "Qwen2) so far: " +
           m.name + " is not one";
  return "";
}

void checkpoint_layer(BlockPlan& b, bool reentrant)
{
  if (reentrant) {
    b.checkpoint_output = b.input_bytes;
    return;
  }
  // An op packs when it keeps bytes (on whichever of its entries) or runs a GEMM that saves
  // its weight; the rerun goes on to that op's last entry. The last op, the residual add
  // that makes the output, is not one: its bytes are the next layer's norm's.
  const size_t n = b.kernels.size();
  auto op_of     = [&](size_t i) { return b.kernels[i].op_first >= 0 ? b.kernels[i].op_first : static_cast<int>(i); };
  const int last = n > 0 ? op_of(n - 1) : 0;
  int64_t stop   = 0;
  for (size_t i = 0; i < n && op_of(i) != last; ++i) {
    const KernelPlan& k = b.kernels[i];
    const bool packs    = k.saved_bytes > 0 || (k.kclass == KernelClass::gemm && k.runs(true) && !k.packs_nothing);
    if (!packs)
      continue;
    size_t end = i + 1;
    while (end < n && op_of(end) == op_of(i))
      ++end;
    stop = std::max<int64_t>(stop, static_cast<int64_t>(end));
  }
  b.checkpoint_stop = stop;
}

const char* modelled_architectures()
{
  return "Llama-family decoders (Llama, Mistral, Qwen2, Qwen3, Phi-3: RMSNorm, rotary positions, a gated MLP) and "
         "their mixtures of experts (Mixtral, Qwen2-MoE, Qwen3-MoE: softmax top-k routing, every layer sparse, at most "
         "one gated shared expert), gpt-oss (attention sinks, biased experts), DeepSeek-V3 (latent attention, "
         "group-limited sigmoid routing, dense first layers, one shared expert), Gemma 2 and 3, GPT-NeoX, GPT-2 and "
         "OPT";
}

BlockPlan model_embedding(const ModelSpec& m, const Tokens& t, const Precision& p)
{
  switch (architecture(m)) {
    case Arch::gpt2: return gpt2_embedding(m, t, p);
    case Arch::opt: return opt_embedding(m, t, p);
    default: return llama_embedding(m, t, p);
  }
}

BlockPlan model_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  switch (architecture(m)) {
    case Arch::gpt2: return gpt2_layer(m, t, p, layer);
    case Arch::opt: return opt_layer(m, t, p, layer);
    case Arch::phi3: return phi3_layer(m, t, p, layer);
    case Arch::neox: return neox_layer(m, t, p, layer);
    case Arch::gemma: return gemma_layer(m, t, p, layer);
    case Arch::gpt_oss: return gpt_oss_layer(m, t, p, layer);
    case Arch::deepseek: return deepseek_layer(m, t, p, layer);
    default: return llama_layer(m, t, p, layer);
  }
}

BlockPlan model_head(const ModelSpec& m, const Tokens& t, const Precision& p)
{
  return lm_head(m, t, p, final_norm_of(m));
}

std::vector<double> embedding_tensors(const ModelSpec& m)
{
  double h = static_cast<double>(m.hidden);
  std::vector<double> v{static_cast<double>(m.vocab) * h}; // embed_tokens / wte
  if (m.learned_positions)                                 // wpe
    v.push_back(static_cast<double>(m.max_seq_len + m.position_offset) * h);
  return v;
}

std::vector<double> layer_tensors(const ModelSpec& m)
{
  double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  double o = static_cast<double>(m.attn_out_dim());
  if (architecture(m) == Arch::gpt2) // ln_1, c_attn, c_proj, ln_2, mlp.c_fc, mlp.c_proj: weight, bias each
    return {h, h, h * 3 * h, 3 * h, h * h, h, h, h, h * f, f, f * h, h};
  if (architecture(m) == Arch::opt) // self_attn_layer_norm, q, k, v, out_proj, final_layer_norm, fc1, fc2
    return {h, h, h * q, q, h * kv, kv, h * kv, kv, q * h, h, h, h, h * f, f, f * h, h};
  if (architecture(m) == Arch::neox) // input_layernorm, query_key_value, dense, post_attention_layernorm, mlp
    return {h, h, h * 3 * h, 3 * h, h * h, h, h, h, h * f, f, f * h, h};
  if (architecture(m) == Arch::phi3) // input_layernorm, qkv_proj, o_proj, post_attention_layernorm, gate_up, down
    return {h, h * (q + 2 * kv), o * h, h, h * 2 * f, f * h};
  // input_layernorm, q_proj (and Qwen3's and Gemma 3's q_norm), k_proj (k_norm), v_proj,
  // o_proj, post_attention_layernorm, (Gemma's pre_feedforward_layernorm,) gate_proj,
  // up_proj, down_proj (, Gemma's post_feedforward_layernorm); biases where the config has them.
  const double d        = static_cast<double>(m.head_dim());
  const bool four_norms = architecture(m) == Arch::gemma;
  std::vector<double> v{h};
  auto weights = [&](double in, double out, bool bias) {
    v.push_back(in * out);
    if (bias)
      v.push_back(out);
  };
  weights(h, q, m.qkv_bias);
  if (m.qk_norm)
    v.push_back(d);
  weights(h, kv, m.qkv_bias);
  if (m.qk_norm)
    v.push_back(d);
  weights(h, kv, m.qkv_bias);
  weights(o, h, m.proj_bias);
  v.push_back(h);
  if (four_norms)
    v.push_back(h);
  weights(h, f, m.mlp_bias);
  weights(h, f, m.mlp_bias);
  weights(f, h, m.mlp_bias);
  if (four_norms)
    v.push_back(h);
  return v;
}

std::vector<double> head_tensors(const ModelSpec& m)
{
  double h = static_cast<double>(m.hidden);
  std::vector<double> v;
  if (m.final_norm)
    v.push_back(h);
  if (m.final_norm && m.norm == NormKind::layernorm)
    v.push_back(h);
  if (!m.tied_embeddings)
    v.push_back(static_cast<double>(m.vocab) * h);
  return v;
}

} // namespace memwall::hf

// OPT (transformers' OPTForCausalLM, modeling_opt.py, do_layer_norm_before as every OPT
// from 1.3B up) as Hugging Face runs it in eager PyTorch: the token embedding plus
// OPTLearnedPositionalEmbedding (positions from the attention mask's cumulative sum,
// offset 2), OPTDecoderLayer (self_attn_layer_norm; q_proj, k_proj and v_proj, each an
// nn.Linear with bias, into SDPA; out_proj; dropout; the residual add;
// final_layer_norm; fc1, ReLU, fc2; dropout; the residual add), the decoder's final
// LayerNorm and the head tied to the token embedding (lm_head, HfModules.cpp). An
// nn.Linear with bias runs as addmm, as GPT-2's Conv1D does (addmm_linear). Kernel lists in
// forward order (EagerOps.hpp).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {

BlockPlan opt_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double c = p.compute, e = p.param;
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  BlockPlan b = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  grad_accumulate(ops, "self_attn_layer_norm.grad_sum", T * h, e);
  layer_norm(ops, "self_attn_layer_norm", T, h, p);
  addmm_linear(ops, "self_attn.q_proj", T, h, q, true, p);
  addmm_linear(ops, "self_attn.k_proj", T, h, kv, true, p);
  addmm_linear(ops, "self_attn.v_proj", T, h, kv, true, p);
  // OPTDecoder's DynamicCache (use_cache, in training too; the measured H200 step of
  // OPT-1.3B: 48 cats, 48 clones over 24 layers): SDPA keeps the copies, k_proj's and
  // v_proj's outputs are then held by nothing.
  if (p.builds_cache)
    dynamic_cache_update(ops, "self_attn", T, kv, p, 0);
  sdpa(ops, "self_attn.sdpa", t, m, p, false);
  addmm_linear(ops, "self_attn.out_proj", T, q, h, false, p);
  if (m.dropout)
    dropout(ops, "self_attn.dropout", T * h, c);
  residual_add(ops, "self_attn.residual", T, h, p, true); // final_layer_norm reads it
  grad_accumulate(ops, "final_layer_norm.grad_sum", T * h, e);
  layer_norm(ops, "final_layer_norm", T, h, p);
  addmm_linear(ops, "fc1", T, h, f, true, p);
  // ReLU: one kernel each way; keeps its output (fc2's input, threshold_backward's mask).
  ops.op({{"activation_fn", 2 * T * f * c, T * f, KernelFamily::generic}},
         {{"activation_fn.bwd", 3 * T * f * c, T * f, KernelFamily::generic}});
  addmm_linear(ops, "fc2", T, f, h, false, p);
  if (m.dropout)
    dropout(ops, "dropout", T * h, c);
  residual_add(ops, "residual", T, h, p, true); // the next self_attn_layer_norm reads it
  b.backward_workspace = std::max(2 * T * f * c + 2 * T * h * e, 4 * T * 3 * h * c + 2 * T * h * e);
  return b;
}

BlockPlan opt_embedding(const ModelSpec& m, const Tokens& t, const Precision& p)
{
  // OPTLearnedPositionalEmbedding: the positions from the attention mask, cumsum times the
  // mask, minus 1, plus the offset (int64), before the gather.
  const double T = t.T();
  return learned_positions_embedding(m, t, p, "embed_tokens", "embed_positions",
                                     {{"embed_positions.cumsum", 16 * T, T, KernelFamily::generic},
                                      {"embed_positions.mask_mul", 24 * T, T, KernelFamily::generic},
                                      {"embed_positions.sub", 16 * T, T, KernelFamily::generic},
                                      {"embed_positions.add_offset", 16 * T, T, KernelFamily::generic}});
}

} // namespace memwall::hf

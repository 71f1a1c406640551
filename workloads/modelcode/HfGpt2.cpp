// GPT-2 (transformers' GPT2LMHeadModel) as Hugging Face runs it in eager PyTorch:
// learned token and position embeddings added and dropped out, GPT2Block (LayerNorm;
// Conv1D c_attn split into q, k and v for SDPA with attention dropout; Conv1D c_proj;
// residual dropout; LayerNorm; Conv1D c_fc, gelu_new, Conv1D c_proj, dropout), the final
// LayerNorm and the head tied to the token embedding (lm_head, HfModules.cpp). Kernel lists in forward order
// (EagerOps.hpp).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {

BlockPlan gpt2_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double c = p.compute, e = p.param, drop = m.dropout ? 1.0 : 0.0;
  BlockPlan b = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  // residual = x; x = ln_1(x); the residual's two gradients (norm and add) summed.
  grad_accumulate(ops, "ln1.grad_sum", T * h, e);
  layer_norm(ops, "ln1", T, h, p);
  addmm_linear(ops, "attn.c_attn", T, h, 3 * h, true, p);
  // q, k and v are views of c_attn's output; their three gradients are copied back into one.
  ops.op({}, {{"attn.bwd.grad_cat", 2 * 3 * T * h * c, 0, KernelFamily::generic}});
  // GPT2Model builds a DynamicCache whenever use_cache (the config's default, in training
  // too): the measured H200 step cats 24 and clones 24 over 12 layers. q's view keeps
  // c_attn's whole output alive beside the copies.
  if (p.builds_cache)
    dynamic_cache_update(ops, "attn", T, h, p, 2 * T * h * c);
  sdpa(ops, "attn.sdpa", t, m, p, false); // q and k come from c_attn in the compute dtype
  addmm_linear(ops, "attn.c_proj", T, h, h, false, p);
  if (drop > 0)
    dropout(ops, "attn.resid_dropout", T * h, c);
  residual_add(ops, "attn.residual", T, h, p, true); // ln_2 reads it
  grad_accumulate(ops, "ln2.grad_sum", T * h, e);
  layer_norm(ops, "ln2", T, h, p);
  addmm_linear(ops, "mlp.c_fc", T, h, f, true, p);
  gelu_new(ops, "mlp.act", T, f, p);
  addmm_linear(ops, "mlp.c_proj", T, f, h, p.autocast(), p); // under autocast gelu_new's output is fp32
  if (drop > 0)
    dropout(ops, "mlp.dropout", T * h, c);
  residual_add(ops, "mlp.residual", T, h, p, true); // the next ln_1 (or ln_f) reads it
  // Gradients alive at once in backward beyond what is kept: gelu_new's at its product
  // rule (three T x f in c; under autocast the output's, 0.5 x's before its cast back and
  // 1 + tanh's in fp32 beside that cast) and the stream's two.
  const double gelu    = p.autocast() ? 3 * T * f * 4 + T * f * c : 3 * T * f * c;
  b.backward_workspace = std::max(gelu + 2 * T * h * e, 4 * T * 3 * h * c + 2 * T * h * e);
  return b;
}

BlockPlan learned_positions_embedding(const ModelSpec& m, const Tokens& t, const Precision& p,
                                      const std::string& tokens, const std::string& positions,
                                      const std::vector<EagerKernel>& position_ids)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab), e = p.param;
  const double P = static_cast<double>(m.max_seq_len + m.position_offset);
  BlockPlan b;
  b.name   = "embed";
  b.params = m.embedding_params();
  EagerOps ops(b.kernels);
  // tokens(ids) + positions(ids): two gathers and an add in the stream's dtype; both
  // tables' dense gradients in backward, the token table's summed with the tied head's.
  ops.op({{tokens, 8 * T + 2 * T * h * e, 0, KernelFamily::generic}},
         embedding_backward(tokens, T, V, h, e, m.tied_embeddings), 8 * T);
  std::vector<EagerKernel> gather = position_ids;
  gather.push_back({positions, 8 * T + 2 * T * h * e, 0, KernelFamily::generic});
  ops.op(gather, embedding_backward(positions, T, P, h, e, false), 8 * T);
  ops.op({{"embed.add", 3 * T * h * e, T * h, KernelFamily::residual}}, {});
  if (m.dropout)
    dropout(ops, "embed.dropout", T * h, e);
  // The first block's input (its norm and its residual add read it in backward).
  ops.op({}, {}, T * h * e);
  return b;
}

BlockPlan gpt2_embedding(const ModelSpec& m, const Tokens& t, const Precision& p)
{
  return learned_positions_embedding(m, t, p, "embed.wte", "embed.wpe", {});
}

} // namespace memwall::hf

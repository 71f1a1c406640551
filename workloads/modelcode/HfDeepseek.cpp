// A DeepSeek-V3 decoder layer as transformers 5 runs it in eager PyTorch
// (models/deepseek_v3/modeling_deepseek_v3.py; calibration/research/hf-moe-inventory.md
// section 2, checked against the H200 step of hf-families.csv).
//
// DeepseekV3Attention (multi-head latent attention): q through the q_a / q_b bottleneck
// with an RMSNorm between, the compressed kv (kv_lora_rank latent plus one rotary key
// shared by the heads) from kv_a_proj_with_mqa, its latent normed; rotary embeddings on
// each head's rope part's even and odd elements; the DynamicCache holds the compressed kv; kv_b_proj
// rebuilds each head's k_nope and v from the latent (every cached token's, each forward),
// the key assembled into a new tensor, the query catted; torch's SDPA with d_qk 192 and
// d_v 128 (cuDNN takes them unpadded). The MLP: DeepseekV3MLP in the first
// first_k_dense_replace layers, else DeepseekV3MoE (HfMoe.cpp: the group-limited sigmoid
// router, the experts, the shared expert after them).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;

// Multi-head latent attention over t; returns what its backward holds at once beyond
// what it keeps.
double latent_attention(EagerOps& ops, const ModelSpec& m, const Tokens& t, const Precision& p)
{
  const MlaSpec& a = m.mla;
  const double T = t.T(), h = static_cast<double>(m.hidden), H = static_cast<double>(m.heads), c = p.compute;
  const double qr = static_cast<double>(a.q_lora_rank), kr = static_cast<double>(a.kv_lora_rank);
  const double dn = static_cast<double>(a.qk_nope_head_dim), dr = static_cast<double>(a.qk_rope_head_dim);
  const double dv = static_cast<double>(a.v_head_dim), dq = dn + dr;
  // The stream's dtype: rotary's cos and sin, so its outputs (fp32 under autocast).
  const double r = p.param;
  // Keys: every token in the cache (generate()'s decode) and the new ones.
  const double Tk = t.b * (t.s + t.cached);
  // The normed stream feeds q_a and kv_a: their input gradients summed.
  grad_accumulate(ops, "attn.grad_sum_kv_a", T * h, p.param);
  if (qr > 0) {
    linear(ops, "attn.q_a", T, h, qr, true, p);
    head_rms_norm(ops, "attn.q_a_norm", T, 1, qr, p); // times its weight: in the stream's dtype
    linear(ops, "attn.q_b", T, qr, H * dq, r != c, p);
  } else {
    linear(ops, "attn.q", T, h, H * dq, true, p);
  }
  linear(ops, "attn.kv_a", T, h, kr + dr, true, p);
  head_rms_norm(ops, "attn.kv_a_norm", T, 1, kr, p);
  // apply_rotary_pos_emb_interleave: each rope part's even and odd elements rotated in
  // place of halves (promoted to the stream's dtype by cos and sin).
  halves_rotary(ops, "attn.rope_q", T, H * dr, p);
  halves_rotary(ops, "attn.rope_k", T, dr, p);
  // The DynamicCache's update (in training too, as the config's use_cache leaves it):
  // the normed latent and the rotated key catted onto the layer's cache (its earlier
  // tokens read and written again), held until the model's forward returns.
  if (p.builds_cache) {
    ops.op(
        {{"attn.cache_cat_latent", 2 * Tk * kr * r, 0, generic}, {"attn.cache_cat_k_rot", 2 * Tk * dr * r, 0, generic}},
        {});
    if (t.cached == 0)
      ops.hold_until_forward_returns(T * (kr + dr) * r);
  }
  // query = cat(q_pass, q_rot): promoted to the stream's dtype; backward each part's
  // gradient back (q_pass cast to c) and the two catted into q_b's output layout.
  ops.op({{"attn.query_cat", T * H * (dn * c + dr * r) + T * H * dq * r, 0, generic}},
         {{"attn.bwd.query_split_cat", 2 * T * H * dq * c, 0, generic},
          cast_kernel("attn.bwd.q_pass_grad_cast", T * H * dn, r, c)});
  // expand_kv: kv_b_proj over every cached latent (cast from the stream's dtype and kept),
  // k_nope and v its views; the key a new tensor, k_nope and the broadcast k_rot copied
  // into its slices. Backward each copy_ (CopySlices) copies the whole key's gradient,
  // clones its slice's for the source and zeroes that slice; k_rot's summed over the
  // heads, the split's gradients catted into kv_b's output layout.
  linear(ops, "attn.kv_b", Tk, kr, H * (dn + dv), r != c, p);
  const double key = Tk * H * dq * c;
  ops.op({{"attn.key_copy_nope", 2 * Tk * H * dn * c, 0, generic}},
         {{"attn.bwd.key_nope_copy", 2 * key, 0, generic},
          {"attn.bwd.key_nope_clone", 2 * Tk * H * dn * c, 0, generic},
          {"attn.bwd.key_nope_zero", Tk * H * dn * c, 0, generic},
          {"attn.bwd.kv_split_cat", 2 * Tk * H * (dn + dv) * c, 0, generic}});
  ops.op({{"attn.key_copy_rot", Tk * dr * r + Tk * H * dr * c, 0, generic}},
         {{"attn.bwd.key_rot_copy", 2 * key, 0, generic},
          {"attn.bwd.key_rot_clone", 2 * Tk * H * dr * c, 0, generic},
          {"attn.bwd.key_rot_zero", Tk * H * dr * c, 0, generic},
          {"attn.bwd.k_rot_sum", Tk * H * dr * c + Tk * dr * r, Tk * H * dr, generic}});
  // SDPA: autocast casts q to c (the key is in c); cuDNN keeps q, k, v's base (kv_b's
  // output), the output and the log-sum-exp.
  if (r != c)
    ops.op({cast_kernel("attn.sdpa.cast_q", T * H * dq, r, c)},
           {cast_kernel("attn.sdpa.bwd.cast_q_grad", T * H * dq, c, r)});
  const double pairs = t.cached > 0 ? t.b * (t.s * t.cached + t.s * (t.s + 1) / 2) : t.b * t.s * t.s;
  const double flops = 2 * pairs * H * (dq + dv);
  const double bytes = (T * H * (dq + dv) + Tk * H * (dq + dv)) * c;
  const double saved = (T * H * (dq + dv) + Tk * H * (dq + dn + dv)) * c + T * H * 4;
  ops.attention("attn.sdpa", flops, bytes, saved, p.compute_dtype,
                {{"attn.sdpa.bwd.dot_do_o", 2 * T * H * dv * c + T * H * 4, T * H * dv, generic}},
                {{"attn.sdpa.bwd.convert_dq", T * H * dq * (4 + c), 0, generic}});
  linear(ops, "attn.o", T, H * dv, h, false, p);
  // In the attention's backward: cuDNN's fp32 dq accumulator, dk, dv, the stream's.
  return T * H * dq * 4 + Tk * H * (dq + dv) * c + 2 * T * h * p.param;
}

} // namespace

BlockPlan deepseek_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden), e = p.param;
  BlockPlan b = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  rms_norm(ops, "ln1", T, h, p);
  const double attn_ws = latent_attention(ops, m, t, p);
  residual_add(ops, "attn.residual", T, h, p, rms_norm_reads_its_input(p));
  rms_norm(ops, "ln2", T, h, p);
  double mlp_ws = 0;
  if (m.moe_layer(layer)) {
    mlp_ws = sparse_moe_block(ops, m, t, p) + 2 * T * h * e;
    residual_add_of(ops, "mlp.residual", T, h, p.param, p.param, rms_norm_reads_its_input(p));
  } else {
    grad_accumulate(ops, "mlp.grad_sum", T * h, e);
    gated_mlp(ops, "mlp", T, h, f, false, p);
    residual_add(ops, "mlp.residual", T, h, p, rms_norm_reads_its_input(p));
    mlp_ws = 3 * T * f * p.compute + 2 * T * h * e;
  }
  b.backward_workspace = std::max(mlp_ws, attn_ws);
  return b;
}

} // namespace memwall::hf

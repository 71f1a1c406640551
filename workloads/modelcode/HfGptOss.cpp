// A gpt-oss decoder layer as transformers 5 runs it in eager PyTorch
// (models/gpt_oss/modeling_gpt_oss.py; calibration/research/hf-moe-inventory.md section 2,
// checked against the H200 step of hf-families.csv). GptOssPreTrainedModel refuses sdpa
// (its attention has a learned sink per head), so attention is eager_attention_forward:
// the scores materialised per head, the sink catted on as one more column, the row maximum
// subtracted, softmax, the sink dropped, the probabilities times v. Rotary embeddings
// rotate the two halves of each head (_apply_rotary_emb), every projection has a bias, and
// the MLP is the experts block with biased experts and a clamped SwiGLU (HfMoe.cpp).
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;
constexpr KernelFamily binary  = KernelFamily::residual;

// A batched GEMM written as one (B H S rows against a K x d operand): each of the B H
// heads reads its own k or v, `extra` elements more than one operand's, forward and in
// each backward pass.
void per_head_operand(KernelPlan& k, double extra, double c)
{
  k.fwd_bytes += extra * c;
  k.bwd_bytes += 2 * extra * c;
}

} // namespace

double sink_attention(EagerOps& ops, const std::string& name, const Tokens& t, const ModelSpec& m, const Precision& p,
                      double k_bytes, double v_bytes)
{
  const double B = t.b, S = t.s, K = t.s + t.cached, H = static_cast<double>(m.heads);
  const double d = static_cast<double>(m.head_dim()), Hkv = static_cast<double>(m.kv_heads);
  const double c = p.compute, T = t.T();
  // The mask follows the stream's dtype (fp32 under autocast): adding it promotes the
  // scores, and the sink, the maximum and softmax stay in that dtype.
  const double x = std::max(p.param, c);
  const double N = B * H * S * K, N1 = B * H * S * (K + 1), rows = B * H * S;
  const double Ek = B * H * K * d; // k or v repeated over the query heads
  // repeat_kv: expand and reshape copy k and v to every query head (none without groups).
  // matmul under autocast casts q and k to the compute dtype where they are not (and keeps
  // the casts); else it keeps q and the repeated k themselves.
  if (H > Hkv) {
    ops.op({{name + ".repeat_k", B * Hkv * K * d * k_bytes + Ek * k_bytes, 0, generic}},
           {{name + ".bwd.repeat_k_sum", Ek * k_bytes + B * Hkv * K * d * k_bytes, B * Hkv * K * d, generic}});
    ops.op({{name + ".repeat_v", B * Hkv * K * d * v_bytes + Ek * v_bytes, 0, generic}},
           {{name + ".bwd.repeat_v_sum", Ek * v_bytes + B * Hkv * K * d * v_bytes, B * Hkv * K * d, generic}});
  }
  const double q_bytes = p.autocast() ? p.param : c; // rotary's output: the stream's dtype
  if (q_bytes != c)
    ops.op({cast_kernel(name + ".cast_q", T * H * d, q_bytes, c)},
           {cast_kernel(name + ".bwd.cast_q", T * H * d, c, q_bytes)});
  if (k_bytes != c)
    ops.op({cast_kernel(name + ".cast_k", Ek, k_bytes, c)}, {cast_kernel(name + ".bwd.cast_k", Ek, c, k_bytes)});
  // scores = q k^T: B H S x d times d x K, keeping q and k in c; then * scaling;
  // backward dq and dk.
  ops.gemm(name + ".scores", B * H * S, d, K, p.compute_dtype, true, (T * H * d + Ek) * c);
  per_head_operand(ops.back(), Ek - K * d, c);
  ops.op({{name + ".scale", 2 * N * c, N, binary}}, {{name + ".bwd.scale", 2 * N * c, N, binary}});
  ops.op({{name + ".add_mask", N * (c + x) + B * S * K * x, N, binary}},
         x != c ? std::vector<EagerKernel>{cast_kernel(name + ".bwd.mask_grad_cast", N, x, c)}
                : std::vector<EagerKernel>{});
  // cat([scores, sinks]); the sink's gradient is its column summed over batch and queries.
  ops.op({{name + ".cat_sinks", (N + N1) * x, 0, generic}},
         {{name + ".bwd.sinks_sum", rows * x + H * 4, rows, generic}});
  // combined - combined.max(-1).values: the maximum keeps its indices; backward the
  // subtrahend's gradient negated and summed per row, scattered into zeros at the
  // maxima, added to the minuend's.
  ops.op({{name + ".max", N1 * x + rows * (x + 8), N1, generic}},
         {{name + ".bwd.max_zeros", N1 * x, 0, generic},
          {name + ".bwd.max_scatter", rows * (x + 8), 0, generic},
          {name + ".bwd.add_max_grad", 3 * N1 * x, N1, binary}},
         rows * 8);
  ops.op({{name + ".sub_max", 2 * N1 * x + rows * x, N1, binary}},
         {{name + ".bwd.neg", 2 * N1 * x, N1, generic}, {name + ".bwd.sum_rows", N1 * x + rows * x, N1, generic}});
  // softmax in the combined dtype, keeping its output; backward reads the output and the
  // gradient.
  ops.op({{name + ".softmax", 2 * N1 * x, 5 * N1, generic}}, {{name + ".bwd.softmax", 3 * N1 * x, 3 * N1, generic}},
         N1 * x);
  // probs[..., :-1].to(v's dtype) and matmul's autocast cast: the probabilities in c
  // (kept for dv); backward the slice's gradient written into zeros of the combined shape.
  std::vector<EagerKernel> slice_bwd{{name + ".bwd.slice_zeros", N1 * x, 0, generic},
                                     {name + ".bwd.slice_copy", 2 * N * x, 0, generic}};
  if (x != c)
    slice_bwd.insert(slice_bwd.begin(), cast_kernel(name + ".bwd.probs_cast", N, c, x));
  ops.op(x != c ? std::vector<EagerKernel>{cast_kernel(name + ".probs_cast", N, x, c)} : std::vector<EagerKernel>{},
         slice_bwd);
  if (v_bytes != c)
    ops.op({cast_kernel(name + ".cast_v", Ek, v_bytes, c)}, {cast_kernel(name + ".bwd.cast_v", Ek, c, v_bytes)});
  // probs v: B H S x K times K x d, keeping the probabilities in c (a cast of softmax's
  // output where that is wider) and the repeated v; backward dprobs and dv.
  ops.gemm(name + ".pv", B * H * S, K, d, p.compute_dtype, true, (x != c ? N * c : 0.0) + Ek * c);
  per_head_operand(ops.back(), Ek - K * d, c);
  ops.op({{name + ".transpose_out", 2 * T * H * d * c, 0, generic}}, {});
  // What the backward holds at once beyond what is kept: at the maximum's backward the
  // softmax's gradient, the negated copy, the zeros and their sum.
  return 3 * N1 * x;
}

BlockPlan gpt_oss_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer)
{
  const double T = t.T(), h = static_cast<double>(m.hidden);
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double o = static_cast<double>(m.attn_out_dim()), e = p.param;
  BlockPlan b = layer_plan(m, layer, T * h * e);
  EagerOps ops(b.kernels);
  rms_norm(ops, "ln1", T, h, p);
  grad_accumulate(ops, "qkv.grad_sum_v", T * h, e);
  grad_accumulate(ops, "qkv.grad_sum_k", T * h, e);
  projection(ops, "attn.q", T, h, q, true, m.qkv_bias, p);
  projection(ops, "attn.k", T, h, kv, true, m.qkv_bias, p);
  projection(ops, "attn.v", T, h, kv, true, m.qkv_bias, p);
  halves_rotary(ops, "attn.rope_q", T, q, p);
  halves_rotary(ops, "attn.rope_k", T, kv, p);
  // The DynamicCache (in training too): rotary's k in the stream's dtype, v cast up to it;
  // in generate()'s decode the cached tokens catted again with the new ones.
  rotated_cache_update(ops, "attn", t.b * (t.s + t.cached), kv, p, true, false);
  const double r       = p.autocast() ? p.param : p.compute;
  const double v_bytes = p.builds_cache && p.autocast() && p.param == 4 ? 4.0 : p.compute;
  const double attn_ws = sink_attention(ops, "attn.eager", t, m, p, r, v_bytes);
  projection(ops, "attn.o", T, o, h, false, m.proj_bias, p);
  residual_add(ops, "attn.residual", T, h, p, rms_norm_reads_its_input(p));
  rms_norm(ops, "ln2", T, h, p);
  const double mlp_ws = sparse_moe_block(ops, m, t, p) + 2 * T * h * e;
  residual_add_of(ops, "mlp.residual", T, h, p.param, p.param, rms_norm_reads_its_input(p));
  b.backward_workspace = std::max(mlp_ws, attn_ws + 2 * T * h * e);
  return b;
}

} // namespace memwall::hf

// torchtitan's Llama blocks (TitanLlama.hpp), op by op (EagerOps.hpp). Bytes are read
// plus written by each ATen kernel; `saved` what autograd holds to the op's backward.
#include "workloads/modelcode/TitanLlama.hpp"

namespace memwall::titan {
namespace {

constexpr KernelFamily generic  = KernelFamily::generic;
constexpr KernelFamily binary   = KernelFamily::residual;
constexpr KernelFamily activate = KernelFamily::activation;

// nn.RMSNorm on CUDA (aten::_fused_rms_norm): reads x and the weight, writes y and the
// fp32 rstd (kept; x is its producer's). Backward: the input gradient (dy, x, rstd), the
// weight gradient (dy, x, reduced over the tokens).
void fused_rms_norm(EagerOps& ops, const std::string& name, double T, double h, double c)
{
  const double E = T * h;
  ops.op({{name, 2 * E * c + h * c + T * 4, 4 * E, KernelFamily::norm}},
         {{name + ".bwd.grad_input", 3 * E * c + h * c + T * 4, 6 * E, KernelFamily::norm},
          {name + ".bwd.grad_weight", 2 * E * c + h * 4, 2 * E, KernelFamily::norm}},
         T * 4);
}

// apply_rotary_emb on q or k (T x width): .float(), view_as_complex times freqs_cis
// (complex64), view_as_real, .type_as; backward the three in reverse. Keeps nothing of
// size (the product keeps freqs_cis, a buffer). Inductor generates no code for complex
// tensors (it falls back to ATen's complex multiply), so compiled the three stay three
// kernels; only GQA's repeat of k fuses into the cast back, which then writes `out` of
// width (the query heads') and whose backward sums the copies' gradients as it casts up.
void complex_rotary(EagerOps& ops, const std::string& name, double T, double width, double c, double out = 0)
{
  const double E = T * width, O = T * (out > 0 ? out : width);
  ops.op({{name + ".float", E * (c + 4), 0, generic},
          {name + ".mul_freqs", 2 * E * 4, 3 * E, binary},
          {name + ".type_as", E * 4 + O * c, 0, generic}},
         {{name + ".bwd.float", O * c + E * 4, O - E, generic},
          {name + ".bwd.mul_conj_freqs", 2 * E * 4, 3 * E, binary},
          {name + ".bwd.type_as", E * (4 + c), 0, generic}});
}

// repeat_kv: expand then reshape copies each KV head to its n_rep query heads; backward
// sums the copies' gradients back.
void repeat_kv(EagerOps& ops, const std::string& name, double T, double kv, double q, double c)
{
  if (q <= kv)
    return;
  ops.op({{name, T * (kv + q) * c, 0, generic}}, {{name + ".bwd.sum_heads", T * (q + kv) * c, T * q, generic}});
}

// Inductor's kernel for a region that ends in an RMSNorm (Lowering::inductor): with
// `residual`, the add of the attention's output to the stream before it (h = x + branch,
// written for the next residual and kept for backward) fused in. Backward, one kernel
// sums the normed output's `grads` gradients (the column-parallel linears' input
// gradients; 1 under tp, where they are summed and reduce-scattered before it), runs the
// norm's backward and adds the residual stream's gradient (eager's grad_sum); a second
// reduces the weight's gradient over the tokens from the same inputs (another reduction
// axis, another kernel).
void inductor_rms_norm(EagerOps& ops, const std::string& name, double T, double h, double c, bool residual,
                       double grads)
{
  const double E = T * h, in = residual ? 2 : 1;
  ops.op({{name, 2 * in * E * c + h * c + T * 4, (in + 3) * E, KernelFamily::norm}},
         {{name + ".bwd", (grads + 3) * E * c + h * c, (grads + 6) * E, KernelFamily::norm},
          {name + ".bwd.grad_weight", (grads + 1) * E * c + h * 4, (grads + 2) * E, KernelFamily::norm}},
         (residual ? E * c : 0.0) + T * 4);
}

// Float8Linear's casts (Lowering::float8), each an op of its own before or after its
// GEMM. An input of Tc x in cast to e4m3 (its amax read again unless the kernel that
// wrote it reduced it); under tp a column-parallel block's input is cast on its sequence
// shard and all-gathered in FP8 to T tokens (PrepareFloat8ModuleInput), else Tc = T. The
// T x in FP8 input is kept for backward, where the weight gradient reads it transposed
// (one copy, read and written in FP8).
void float8_cast_input(EagerOps& ops, const std::string& name, double Tc, double T, double in, double c,
                       bool amax_fused)
{
  const double E = Tc * in;
  ops.op({{name + ".to_float8", (amax_fused ? 0 : E * c) + E * c + E, 2 * E, KernelFamily::generic}},
         {{name + ".float8_transpose", 2 * T * in, 0, KernelFamily::generic}}, T * in);
}

// The gathered bf16 weight (in x out) cast to e4m3 each forward (its amax, then the
// cast), kept in FP8 for backward (the autograd function saves it; per-op checkpointing
// casts it again instead), where it is transposed for the input gradient.
void float8_cast_weight(EagerOps& ops, const std::string& name, double in, double out, double c)
{
  const double W = in * out;
  ops.op({{name + ".weight.to_float8", 2 * W * c + W, 2 * W, KernelFamily::generic}},
         {{name + ".weight.float8_transpose", 2 * W, 0, KernelFamily::generic}}, W);
}

// The output gradient (Tc x out) cast to e5m2 (its amax read again unless fused into the
// kernel that wrote it), before the GEMM's backward, in both layouts the two backward
// GEMMs read; a row-parallel output's gradient under tp is cast on its sequence shard,
// all-gathered in FP8 to T tokens (Float8RowwiseParallel) and transposed there.
void float8_cast_grad(EagerOps& ops, const std::string& name, double Tc, double T, double out, double c,
                      bool amax_fused)
{
  const double E = Tc * out, layouts = Tc < T ? E + 2 * T * out : 2 * E;
  ops.op({}, {{name + ".grad.to_float8", (amax_fused ? 0 : E * c) + E * c + layouts, 2 * E, KernelFamily::generic}});
}
} // namespace

BlockPlan layer(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, int64_t l, bool per_op_checkpoint,
                Split split, Lowering lowering)
{
  const bool inductor = lowering.inductor;
  // T: the tokens of a micro-batch on this rank (gathered, between a column- and a
  // row-parallel linear); Ts = T / tp: the sequence shard norms and residuals run on;
  // Tk: the keys its queries attend over (the whole sequence under cp). q, kv, f and the
  // heads: this rank's columns.
  const double tp = split.tp, cp = split.cp;
  const double T = t.T(), Ts = T / tp, Tk = T * cp, h = static_cast<double>(m.hidden);
  const double f = static_cast<double>(m.ffn_hidden) / tp;
  const double q = static_cast<double>(m.q_dim()) / tp, kv = static_cast<double>(m.kv_dim()) / tp;
  const double heads = static_cast<double>(m.heads) / tp, c = p.compute;
  const Dtype dt = p.compute_dtype;
  BlockPlan b    = hf::layer_plan(m, l, Ts * h * c);
  b.params       = (b.params - m.layer_norm_params()) / tp + m.layer_norm_params(); // norms replicated
  EagerOps ops(b.kernels);
  auto eager_norm = [&](const std::string& name) {
    if (lowering.fused_rms_norm)
      fused_rms_norm(ops, name, Ts, h, c);
    else
      hf::rms_norm(ops, name, Ts, h, p);
  };
  // The sequence-parallel input of a column-parallel block all-gathered (PrepareModuleInput
  // Shard(1) -> Replicate), its gradient reduce-scattered back; a row-parallel output
  // reduce-scattered (output_layouts Shard(1)), its gradient all-gathered. Under Float8
  // both gathers move FP8 (1 byte), the reduce-scatters bf16. Async TP (torch's
  // micro-pipeline TP: symmetric memory, copy engines) runs a gather beside the GEMM it
  // feeds, chunk by chunk as each arrives, and a row-parallel GEMM in tp chunks, each
  // chunk's reduce-scatter beside the next; the summed input gradients of wq, wk and wv
  // (of w1 and w3) reach their reduce-scatter through an add, which the pass does not fuse.
  const bool float8 = lowering.float8;
  TpComm gather{CollectiveKind::all_gather, tp > 1 ? T * h * (float8 ? 1 : c) : 0.0};
  TpComm scatter{CollectiveKind::reduce_scatter, tp > 1 ? T * h * c : 0.0};
  const TpComm grad_scatter = scatter;
  if (lowering.async_tp) {
    gather.overlap  = TpOverlap::ring_exchange;
    scatter.overlap = TpOverlap::pipeline;
    scatter.splits  = static_cast<int>(tp);
  }
  // h = x + attention(attention_norm(x)): x's gradient from both users summed (in the
  // composite norm's backward, after its cast back: hf::rms_norm).
  if (inductor) {
    inductor_rms_norm(ops, "attention_norm", Ts, h, c, false, tp > 1 ? 1 : 3);
  } else {
    if (lowering.fused_rms_norm)
      hf::grad_accumulate(ops, "attn.grad_sum", Ts * h, c);
    eager_norm("attention_norm");
  }
  // The normed input of `grads` column-parallel linears: gathered over tp (in FP8 under
  // Float8, cast on the shard first: one cast for them all, Inductor's CSE, its amax in
  // the norm's kernel); backward their input gradients summed, then reduce-scattered
  // (under Inductor at tp 1 the sum is in the norm's backward kernel).
  auto column_input = [&](const std::string& block, const std::string& cast, double grads) {
    if (!float8)
      b.kernels.back().fwd_after = gather;
    if (!inductor || tp > 1) {
      ops.op({}, {{block + ".bwd.input_grad_sum", (grads + 1) * T * h * c, (grads - 1) * T * h, binary}});
      b.kernels.back().bwd_after = grad_scatter;
    }
    if (float8) {
      float8_cast_input(ops, cast, Ts, T, h, c, true);
      b.kernels.back().fwd_after = gather;
    }
  };
  // wq, wk and wv read the same normed x (kept once, by wq: the gathered one, as DTensor's
  // autograd saves it).
  column_input("attn", "attention.input", 3);
  // A block Linear: under Float8 its weight cast before its GEMM and its output
  // gradient's cast after it (met first in backward, before a row-parallel GEMM's
  // gradient gather: `shard` tokens); the index of its GEMM.
  const Dtype gemm_dtype = float8 ? Dtype::fp8 : dt;
  auto linear = [&](const std::string& name, double in, double out, double saved, bool grad_amax_fused, double shard) {
    if (float8)
      float8_cast_weight(ops, name, in, out, c);
    ops.gemm(name, T, in, out, gemm_dtype, true, float8 ? 0.0 : saved); // Float8 keeps its FP8 input instead
    const size_t at = b.kernels.size() - 1;
    if (float8)
      float8_cast_grad(ops, name, shard, T, out, c, grad_amax_fused);
    return at;
  };
  linear("attention.wq", h, q, T * h * c, true, T);
  linear("attention.wk", h, kv, 0, true, T);
  linear("attention.wv", h, kv, 0, q > kv, T); // v's gradient from repeat_v's backward kernel, or SDPA's own
  // Inductor writes k repeated to every query head in rotary's cast back where GQA repeats
  // it (under cp k is gathered first, then repeated).
  const bool repeat_k_fused = inductor && cp == 1 && q > kv;
  complex_rotary(ops, "attention.rotary_q", T, q, c);
  complex_rotary(ops, "attention.rotary_k", T, kv, c, repeat_k_fused ? q : kv);
  // Context parallelism as the Llama 3 paper runs it (section 3.3.2: K and V all-gathered
  // from the cp group before attention, exposed, Q local; torch's context_parallel with
  // its allgather rotate method moves the same): the rotated K and V gathered at their
  // GQA width, gathered again before attention's backward (not kept) and their
  // gradients, summed over the repeated heads, reduce-scattered back. Each rank holds
  // the head and the tail chunk of the sequence (the paper's, torchtitan's headtail
  // balancer): its queries meet 1/cp of the causal pairs, as 2 T Tk of the full count.
  const double kv_bytes = cp > 1 ? Tk * 2 * kv * c : 0.0;
  if (cp > 1)
    b.kernels.back().fwd_after = {CollectiveKind::all_gather, kv_bytes, CommGroup::cp};
  const size_t repeat_at = b.kernels.size(); // under cp, repeat_k's backward: the sum over its heads
  if (!repeat_k_fused)
    repeat_kv(ops, "attention.repeat_k", Tk, kv, q, c);
  repeat_kv(ops, "attention.repeat_v", Tk, kv, q, c);
  // SDPA (flash): q and the repeated k and v, the output and the fp32 log-sum-exp kept
  // (under cp the local k and v, gathered and repeated again in backward); backward dO.O
  // first, dq's fp32 accumulator converted after.
  double flops      = 2 * t.b * t.s * (t.s * cp) * (q + static_cast<double>(m.attn_out_dim()) / tp);
  double sdpa_saved = cp > 1 ? 2 * T * q * c + 2 * T * kv * c + T * heads * 4 : 4 * T * q * c + T * heads * 4;
  size_t sdpa_at    = b.kernels.size();
  std::vector<EagerKernel> before{{"attention.sdpa.bwd.dot_do_o", 2 * T * q * c + T * heads * 4, T * q, generic}};
  if (cp > 1 && q > kv)
    before.push_back({"attention.sdpa.bwd.repeat_kv", 2 * Tk * (kv + q) * c, 0, generic});
  ops.attention("attention.sdpa", flops, 2 * T * q * c + 2 * Tk * q * c, sdpa_saved, dt, before,
                {{"attention.sdpa.bwd.convert_dq", T * q * (4 + c), 0, generic}});
  if (cp > 1) {
    // The entries from sdpa_at: convert_dq, the kernel, then the helpers that run before
    // it in reverse (repeat_kv again, dot_do_o): K and V come back before they are repeated.
    b.kernels[sdpa_at + (q > kv ? 2 : 1)].bwd_before = {CollectiveKind::all_gather, kv_bytes, CommGroup::cp};
    KernelPlan& sum                                  = q > kv ? b.kernels[repeat_at] : b.kernels[sdpa_at];
    sum.bwd_after                                    = {CollectiveKind::reduce_scatter, kv_bytes, CommGroup::cp};
  }
  if (float8) // SDPA's output: its amax read again
    float8_cast_input(ops, "attention.wo", T, T, q, c, false);
  const size_t wo          = linear("attention.wo", q, h, 0, true, Ts);
  b.kernels[wo].fwd_after  = scatter;
  b.kernels[wo].bwd_before = gather;
  // torch's fused matmul-reduce-scatter leaves each rank the tp partial sums of its shard
  // in a symmetric buffer, then adds them (reduce_fn): T h read, T h / tp written.
  std::vector<size_t> partial_sums;
  auto reduce_partials = [&](const std::string& name) {
    if (!lowering.async_tp || tp == 1)
      return;
    ops.op({{name + ".reduce_partials", T * h * c + Ts * h * c, T * h, binary}}, {});
    partial_sums.push_back(b.kernels.size() - 1);
  };
  reduce_partials("attention.wo");
  if (inductor) {
    inductor_rms_norm(ops, "attn.residual_ffn_norm", Ts, h, c, true, tp > 1 ? 1 : 2);
  } else {
    // The sum kept where the norm after it reads it in backward: the fused norm, not the
    // composite one (which keeps an fp32 copy of its own).
    hf::residual_add(ops, "attn.residual", Ts, h, p, lowering.fused_rms_norm);
    if (lowering.fused_rms_norm)
      hf::grad_accumulate(ops, "ffn.grad_sum", Ts * h, c);
    eager_norm("ffn_norm");
  }
  column_input("ffn", "feed_forward.input", 2);
  linear("feed_forward.w1", h, f, T * h * c, true, T);
  linear("feed_forward.w3", h, f, 0, true, T);
  if (inductor) {
    // silu(w1 x) * w3 x in one kernel, keeping both inputs; backward both gradients in one.
    ops.op({{"feed_forward.silu_mul", 3 * T * f * c, 5 * T * f, activate}},
           {{"feed_forward.silu_mul.bwd", 5 * T * f * c, 8 * T * f, activate}}, 2 * T * f * c);
  } else {
    ops.op({{"feed_forward.silu", 2 * T * f * c, 4 * T * f, activate}},
           {{"feed_forward.bwd.silu", 3 * T * f * c, 6 * T * f, activate}}, T * f * c);
    ops.op({{"feed_forward.mul", 3 * T * f * c, T * f, binary}},
           {{"feed_forward.bwd.mul_w3", 3 * T * f * c, T * f, binary},
            {"feed_forward.bwd.mul_silu", 3 * T * f * c, T * f, binary}},
           2 * T * f * c);
  }
  if (float8) // the product from SiLU-times-w3's kernel, its amax reduced there
    float8_cast_input(ops, "feed_forward.w2", T, T, f, c, true);
  // w2's output gradient comes from the next block's graph: its amax read again.
  const size_t w2          = linear("feed_forward.w2", f, h, T * f * c, false, Ts);
  b.kernels[w2].fwd_after  = scatter;
  b.kernels[w2].bwd_before = gather;
  reduce_partials("feed_forward.w2");
  hf::residual_add(ops, "ffn.residual", Ts, h, p, inductor || lowering.fused_rms_norm);
  // Gradients alive at once in backward beyond what is kept: the MLP's (three T x f),
  // or the attention's (dq's fp32 accumulator, dk and dv per query head, the stream's).
  // Under cp the gathered, repeated k and v are alive beside their gradients.
  b.backward_workspace =
      std::max(3 * T * f * c + 2 * T * h * c, T * q * 4 + (cp > 1 ? 4 : 2) * Tk * q * c + 2 * T * h * c);

  if (per_op_checkpoint) {
    // torchtitan's policy: save the outputs of mm (every other one: the 1st, 3rd, 5th and
    // 7th of a layer) and of SDPA; recompute every other op. The layer's input is the
    // checkpoint's, kept on an entry of its own.
    int mm = 0;
    for (size_t i = 0; i < b.kernels.size(); ++i) {
      KernelPlan& k           = b.kernels[i];
      k.selective             = true; // recomputed: keeps nothing, gets its saved tensors back
      k.selective_kept        = 0;
      k.selective_regenerated = k.saved_bytes;
      if (i == sdpa_at) { // the SDPA entry that holds its saved tensors
        k.selective             = false;
        k.selective_kept        = T * q * c + T * heads * 4;     // the output and log-sum-exp
        k.selective_regenerated = sdpa_saved - k.selective_kept; // q and the repeated k and v
      } else if (k.kclass == KernelClass::attention) {
        k.selective = false;
      } else if (k.kclass == KernelClass::gemm && ++mm % 2 == 1) {
        k.selective      = false; // its output kept; its input comes back with the norm or the product
        k.selective_kept = T * static_cast<double>(k.shape.n) * c;
      }
      // The save list holds reduce_scatter_tensor: under tp wo's and w2's reduce-scattered
      // outputs are kept too (the sequence shard).
      if (k.fwd_after.kind == CollectiveKind::reduce_scatter && k.fwd_after.bytes > 0)
        k.selective_kept += Ts * h * c;
    }
    // The partial sums' reduction makes the reduce-scatter's output, which the save list keeps.
    for (size_t at : partial_sums)
      b.kernels[at].selective = false;
    KernelPlan input; // the layer's input: the sequence shard under tp
    input.name                  = "checkpoint.input";
    input.kclass                = KernelClass::elementwise;
    input.selective_kept        = Ts * h * c;
    input.selective_regenerated = 0;
    b.kernels.insert(b.kernels.begin(), input);
  }
  return b;
}

BlockPlan embedding(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, Split split)
{
  const double tp = split.tp;
  // Under tp, RowwiseParallel(input Replicate, output Shard(1)): this rank's V / tp rows
  // looked up (ids outside them masked to zero), the partial sums reduce-scattered to the
  // sequence shard; backward gathers the gradient back.
  const double T = t.T(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab) / tp, c = p.compute;
  BlockPlan b;
  b.name   = "embed";
  b.params = m.embedding_params() / tp;
  EagerOps ops(b.kernels);
  // tok_embeddings in bf16: a gather (keeps the ids, and the first layer's input).
  ops.op({{"tok_embeddings", 8 * T + 2 * T * h * c, 0, generic}},
         hf::embedding_backward("tok_embeddings", T, V, h, c, m.tied_embeddings), 8 * T + T * h * c / tp);
  if (tp > 1) {
    b.kernels.back().fwd_after  = {CollectiveKind::reduce_scatter, T * h * c};
    b.kernels.back().bwd_before = {CollectiveKind::all_gather, T * h * c}; // the first of its backward
  }
  // freqs_cis: a buffer computed at init, sliced per forward.
  return b;
}

BlockPlan head(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, Split split, Lowering lowering)
{
  const double tp = split.tp;
  // Under tp: the final norm sequence-parallel, the output ColwiseParallel (its input
  // all-gathered, the logits left sharded over the vocabulary: loss_parallel, torchtitan's
  // default), the loss over this rank's V / tp columns with its row maximum, sum of
  // exponentials and target logit all-reduced (T fp32 values each).
  const double T = t.T(), Ts = T / tp, h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab) / tp;
  const double c = p.compute;
  BlockPlan b;
  b.name        = "head";
  b.params      = (m.final_norm ? m.norm_params() : 0.0) + m.head_params() / tp;
  b.input_bytes = Ts * h * c;
  EagerOps ops(b.kernels);
  if (m.final_norm && lowering.fused_rms_norm) // the output and loss are not compiled
    fused_rms_norm(ops, "norm", Ts, h, c);
  else if (m.final_norm)
    hf::rms_norm(ops, "norm", Ts, h, p);
  const TpComm gather{CollectiveKind::all_gather, tp > 1 ? T * h * c : 0.0};
  if (b.kernels.empty()) { // no final norm: the gather on an entry of its own
    KernelPlan input;
    input.name   = "output.input";
    input.kclass = KernelClass::elementwise;
    b.kernels.push_back(input);
  }
  b.kernels.back().fwd_after = gather;
  ops.gemm("output", T, h, V, p.compute_dtype, true, T * h * c);
  b.kernels.back().bwd_after = {CollectiveKind::reduce_scatter, gather.bytes};
  b.grads_at                 = static_cast<int>(b.kernels.size()) - 1; // after the loss's gradients
  ops.gradient_to_previous_op(T * h * c);                              // its input's, until the norm reads it
  // The logits (pred) live until the train step's `del pred`, before backward: as
  // transformers 5's output does.
  // cross_entropy(pred.flatten(0, 1).float(), labels): the logits cast to fp32, then
  // log_softmax (kept) and nll_loss.
  const size_t loss_at = b.kernels.size();
  hf::causal_lm_loss(ops, t, V, p);
  if (tp > 1)
    for (size_t i = loss_at; i < b.kernels.size(); ++i)
      if (b.kernels[i].name == "loss.upcast" || b.kernels[i].name == "loss.log_softmax" ||
          b.kernels[i].name == "loss.nll") // the row maximum, the sum of exponentials, the target logit
        b.kernels[i].fwd_after = {CollectiveKind::all_reduce, T * 4};
  b.backward_workspace = 0; // the loss's gradients and the output's come and go op by op
  return b;
}

} // namespace memwall::titan

// The blocks before and after the transformer layers: the embedding and the head with
// its loss. Megatron-LM's inventory (GPT, vocabulary-parallel): the word lookup and its
// all-reduce, the learned-position lookup and add, dropout; the final norm, the logits
// GEMM and the cross-entropy in fp32, six passes over the logits and three small
// all-reduces among the tp ranks (max, target logit, sum of exponentials).
#include "workloads/training/blocks/BlockKernels.hpp"
#include "workloads/training/blocks/KernelBuilders.hpp"

namespace memwall {

using namespace kernels;

BlockPlan embedding_block(const ModelSpec& m, const StepShape& s)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, e = s.act_bytes;
  BlockPlan b;
  b.name = "embed";
  // Vocabulary-parallel: each rank holds V/t rows and the partial lookups are all-reduced.
  double params                                 = m.embedding_params() / tp(s);
  (s.lora.enabled ? b.frozen_params : b.params) = params;
  // Gathers T rows of the table; saves the token ids (int64) for the sparse gradient.
  KernelPlan k = pointwise("embed.lookup", KernelFamily::generic, T * h, T * h, 1, s, T * 8);
  k.fwd_bytes  = 2 * T * h * e + T * 8;
  if (s.tp > 1)
    k.fwd_after = {s.sp ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, T * h * e};
  b.kernels.push_back(k);
  if (m.learned_positions) {
    // Position rows looked up (read, write) and added to the words (read 2, write 1);
    // backward accumulates their gradient into the position table.
    double rows    = T * h / rep_div(s);
    KernelPlan pos = pointwise("embed.positions", KernelFamily::generic, rows, rows, 1, s, 0);
    pos.fwd_bytes  = 5 * rows * e;
    pos.bwd_bytes  = 2 * rows * e;
    b.kernels.push_back(pos);
  }
  if (m.dropout)
    b.kernels.push_back(dropout("embed.dropout", T * h / rep_div(s), s, T * h / rep_div(s)));
  b.backward_workspace = T * h * e;
  return b;
}

namespace {

// Megatron's vocab-parallel cross-entropy over N = T x V/t logits, cast to fp32 first:
//   cast (read e, write 4)  max (read 4) + all-reduce  shift by max (read 4, write 4)
//   target logit + all-reduce  exp (read 4, write 4)  sum (read 4) + all-reduce
//   normalise (read 4, write 4, kept for backward).
// Backward scales the kept softmax in place (read 4, write 4) and casts back to e bytes.
void cross_entropy(std::vector<KernelPlan>& ks, double T, double N, const StepShape& s)
{
  const double e   = s.act_bytes;
  auto reduce_of_T = [&](double floats) {
    return s.tp > 1 ? TpComm{CollectiveKind::all_reduce, floats * 4} : TpComm{};
  };
  KernelPlan cast = forward_only("loss.cast", (e + 4) * N, 0);
  cast.bwd_bytes  = (4 + e) * N;
  ks.push_back(cast);
  KernelPlan max = forward_only("loss.max", 4 * N, N);
  max.fwd_after  = reduce_of_T(T);
  ks.push_back(max);
  ks.push_back(forward_only("loss.shift", 8 * N, N));
  KernelPlan target = forward_only("loss.target", 3 * 4 * T, T);
  target.fwd_after  = reduce_of_T(T);
  ks.push_back(target);
  ks.push_back(forward_only("loss.exp", 8 * N, N));
  KernelPlan sum = forward_only("loss.sum", 4 * N, N);
  sum.fwd_after  = reduce_of_T(T);
  ks.push_back(sum);
  KernelPlan softmax  = forward_only("loss.softmax", 8 * N, N);
  softmax.bwd_bytes   = 8 * N;
  softmax.bwd_flops   = N;
  softmax.saved_bytes = 4 * N;
  ks.push_back(softmax);
}

} // namespace

BlockPlan head_block(const ModelSpec& m, const StepShape& s)
{
  double T = static_cast<double>(s.micro_batch) * s.seq_len;
  double h = m.hidden, V = m.vocab / tp(s), e = s.act_bytes, r = rep_div(s);
  BlockPlan b;
  b.name                                        = "head";
  double params                                 = (m.final_norm ? m.norm_params() : 0.0) + m.head_params() / tp(s);
  (s.lora.enabled ? b.frozen_params : b.params) = params;
  b.input_bytes                                 = T * h * e / r;
  if (m.final_norm)
    b.kernels.push_back(pointwise("final_ln", KernelFamily::norm, T * h / r, T * h / r, 8, s, T * h * e / r));
  // Vocabulary-parallel logits: the input is replicated (gathered under sp); the logits
  // (V/t columns) are kept for the loss's backward.
  KernelPlan logits = gemm("logits", T, h, V, s, T * h * e + T * V * e);
  if (s.tp > 1) {
    if (s.sp && !b.kernels.empty())
      b.kernels.back().fwd_after = {CollectiveKind::all_gather, T * h * e};
    logits.bwd_after = {s.sp ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, T * h * e};
  }
  b.kernels.push_back(logits);
  cross_entropy(b.kernels, T, T * V, s);
  b.backward_workspace = T * V * e + T * h * e;
  return b;
}

} // namespace memwall

// A causal LM's head block as transformers runs it: the final norm, lm_head (Gemma 2's
// softcap after it) and the loss over the vocabulary, each tensor of the logits and
// their gradients allocated and freed where its op runs, as the release chosen runs them
// (calibration/research/transformers-loss-path.md); Liger's fused linear cross entropy in
// their place (HfLiger.cpp).
#include "workloads/modelcode/HfModules.hpp"

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;

} // namespace

void causal_lm_loss(EagerOps& ops, const Tokens& t, double V, const Precision& p)
{
  // calibration/research/transformers-loss-path.md: what each release allocates, in order.
  const double T = t.T(), N = T * V, c = p.compute;
  const bool model_upcast = p.loss == LossPath::model_upcast_shifted_copy;
  const bool copies       = p.loss != LossPath::shifted_labels;
  // The loss reads every token's logits with the labels shifted (4.49 on), one fewer a
  // sequence where the logits are copied shifted.
  const double Ns = copies ? (T - t.b) * V : N;
  // The logits (the last entry's output, in c): cast in the model's own forward and dropped
  // (4.40-4.45), else the output's until compute_loss returns (the model's forward here).
  if (model_upcast)
    ops.output_read_once(N * c);
  else
    ops.hold_until_forward_returns(N * c);
  // logits.float(): the output's (4.40-4.45) or the loss function's own until it returns;
  // backward its gradient cast back to c, read by lm_head's backward.
  ops.op({{"loss.upcast", N * (c + 4), 0, generic}}, {{"loss.bwd.downcast", N * (4 + c), 0, generic}});
  ops.hold_until_forward_returns(4 * N);
  ops.gradient_to_previous_op(N * c);
  if (copies) {
    // logits[..., :-1, :].contiguous(): freed as the forward returns; backward the slice's
    // gradient written into zeros of the whole logits' shape.
    ops.op({{"loss.shift_logits", 8 * Ns, 0, generic}},
           {{"loss.bwd.shift_zeros", 4 * N, 0, generic}, {"loss.bwd.shift_copy", 8 * Ns, 0, generic}});
    ops.hold_until_forward_returns(4 * Ns);
    ops.gradient_to_previous_op(4 * N);
    ops.op({{"loss.labels_shift", 16 * T, 0, generic}}, {});
  } else {
    ops.op({{"loss.labels_fill", 16 * t.b, 0, generic},
            {"loss.labels_pad", 16 * T, 0, generic},
            {"loss.labels_shift", 16 * T, 0, generic}},
           {});
  }
  // cross_entropy = log_softmax (ATen's blockwise softmax reads each row three times and
  // writes it once, keeping its fp32 output) then nll_loss. Backward: nll's gradient
  // zeroed and scattered, log_softmax's (reads the gradient twice and the output once);
  // each gradient alive until the op before has read it.
  ops.op({{"loss.log_softmax", 16 * Ns, 4 * Ns, generic}}, {{"loss.bwd.log_softmax", 16 * Ns, 3 * Ns, generic}},
         4 * Ns);
  ops.gradient_to_previous_op(4 * Ns);
  ops.op({{"loss.nll", 12 * T, T, generic}}, {{"loss.bwd.ones", 4, 0, generic},
                                              {"loss.bwd.nll_zero", 4 * Ns, 0, generic},
                                              {"loss.bwd.nll_scatter", 12 * T, T, generic}});
  ops.gradient_to_previous_op(4 * Ns);
}

BlockPlan lm_head(const ModelSpec& m, const Tokens& t, const Precision& p, NormFn final_norm)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
  BlockPlan b;
  b.name        = "head";
  b.params      = (m.final_norm ? m.norm_params() : 0.0) + m.head_params();
  b.input_bytes = T * h * p.param;
  EagerOps ops(b.kernels);
  if (m.final_norm)
    final_norm(ops, "final_norm", T, h, p);
  if (p.liger) { // the lm_head and the loss fused, in chunks: no T x V logits
    liger_linear_cross_entropy(ops, T, h, V, !p.lora.enabled, p);
    return b;
  }
  linear(ops, "lm_head", T, h, V, true, p);
  // Its input's gradient, in c, until the input's cast (or the final norm) has read it.
  ops.gradient_to_previous_op(T * h * p.compute);
  // Its weight's gradient comes as its backward runs, after the loss's have come and gone.
  b.grads_at = static_cast<int>(b.kernels.size()) - 1;
  if (m.final_logit_softcap > 0) { // Gemma 2: logits / cap, tanh, * cap in the compute dtype; keeps tanh's output
    const double N = T * V, c = p.compute;
    ops.output_read_once(N * c); // lm_head's output: the division's alone
    ops.op({{"softcap.div", 2 * N * c, N, KernelFamily::generic}},
           {{"softcap.bwd.div", 2 * N * c, N, KernelFamily::generic}});
    ops.output_read_once(N * c);
    ops.gradient_to_previous_op(N * c);
    ops.op({{"softcap.tanh", 2 * N * c, 10 * N, KernelFamily::generic}},
           {{"softcap.bwd.tanh", 3 * N * c, 3 * N, KernelFamily::generic}}, N * c);
    ops.gradient_to_previous_op(N * c);
    ops.op({{"softcap.mul", 2 * N * c, N, KernelFamily::generic}},
           {{"softcap.bwd.mul", 2 * N * c, N, KernelFamily::generic}});
    ops.gradient_to_previous_op(N * c);
  }
  causal_lm_loss(ops, t, V, p);
  // The loss's gradients and lm_head's come and go op by op; held through the block's
  // backward: lm_head's input gradient cast to the stream's dtype under autocast.
  b.backward_workspace = p.autocast() ? T * h * p.param : 0.0;
  return b;
}

} // namespace memwall::hf

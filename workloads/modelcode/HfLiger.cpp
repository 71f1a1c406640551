// Liger-Kernel's Triton kernels as apply_liger_kernel_to_llama puts them in a Hugging Face
// Llama (the Trainer's use_liger_kernel): read from Liger's ops/rms_norm.py, swiglu.py,
// rope.py and fused_linear_cross_entropy.py (calibration/research/peft-qlora-liger.md
// section 5). Liger's functions are autograd Functions without custom_fwd casts: they run
// in their inputs' dtype.
#include "workloads/modelcode/HfModules.hpp"

#include <cmath>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;

double next_pow2(double x) { return std::pow(2.0, std::ceil(std::log2(std::max(1.0, x)))); }

// SMs whose partial weight gradients LigerRMSNorm's backward sums (an H100's or H200's 132).
constexpr double rms_norm_programs = 132;

} // namespace

void liger_rms_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p)
{
  const double E = T * h, e = p.param, w = p.param;
  // _rms_norm_forward_kernel: x in, y out in x's dtype, rstd out in fp32 (kept with x,
  // which the residual stream holds anyway). Backward: _rms_norm_backward_kernel writes
  // dx into dy's buffer and per-program partial weight gradients in fp32, summed (and
  // computed for a frozen weight too: Liger does not check needs_input_grad).
  std::vector<EagerKernel> bwd{
      {name + ".bwd", 2 * E * e + E * e + 4 * T + h * w + 4 * rms_norm_programs * h, 0, KernelFamily::norm},
      {name + ".bwd.sum_weight", 4 * rms_norm_programs * h + h * w, 0, generic}};
  // Keeps x too where nothing else does (a bf16 stream: the residual add keeps an fp32 one).
  ops.op({{name, 2 * E * e + h * w + 4 * T, 8 * E, KernelFamily::norm}}, bwd,
         4 * T + (rms_norm_reads_its_input(p) ? 0.0 : E * e));
}

void liger_rope(EagerOps& ops, const std::string& name, double T, double q_width, double kv_width, const Precision& p)
{
  // _triton_rope over q and k at once, in place in their (compute) dtype; cos and sin
  // (the model's, shared by every layer) are all it keeps.
  const double bytes = 2 * T * (q_width + kv_width) * projection_output_bytes(p, true);
  ops.op({{name, bytes, 3 * T * (q_width + kv_width), KernelFamily::rope}},
         {{name + ".bwd", bytes, 3 * T * (q_width + kv_width), KernelFamily::rope}});
}

void liger_swiglu(EagerOps& ops, const std::string& name, double T, double f, const Precision& p)
{
  const double c = projection_output_bytes(p, true); // gate's and up's outputs' dtype
  ops.op({{name, 3 * T * f * c, 6 * T * f, KernelFamily::activation}},
         {{name + ".bwd", 5 * T * f * c, 10 * T * f, KernelFamily::activation}}, 2 * T * f * c);
}

void liger_linear_cross_entropy(EagerOps& ops, double T, double h, double V, bool head_trains, const Precision& p)
{
  const double c = p.compute, x = p.param;
  // chunk_size = next_pow2(ceil(BT / ceil(V / H))): as many chunks as the vocabulary is
  // wider than the model, rounded.
  const double chunk = next_pow2(std::ceil(T / std::ceil(V / h)));
  const int chunks   = static_cast<int>(std::ceil(T / chunk));
  // Setup: grad_input zeroed (and grad_weight, an lm_head that trains: fp32 like the
  // parameter), the per-row losses, the label mask and its count (read by the host).
  std::vector<EagerKernel> setup{{"lce.zero_grad_input", T * h * x, 0, generic},
                                 {"lce.zero_loss", 4 * T, 0, generic},
                                 {"lce.target_mask", 9 * T, 0, generic},
                                 {"lce.count_targets", T, 0, generic}};
  if (head_trains)
    setup.push_back({"lce.zero_grad_weight", V * h * p.param, 0, generic});
  // Held from here to backward: the input's gradient and the weight's. The backward's
  // element_mul scales each in place by the loss's gradient (1 / the tokens counted).
  std::vector<EagerKernel> bwd{{"lce.bwd.scale_grad_input", 2 * T * h * x, T * h, generic}};
  if (head_trains) {
    bwd.push_back({"lce.bwd.scale_grad_weight", 2 * V * h * p.param, V * h, generic});
    bwd.push_back({"lce.bwd.accumulate_weight_grad", 3 * V * h * p.param, V * h, KernelFamily::residual, true});
  }
  // Backward's torch.equal(grad_output, 1) reads on the host before the scales run (the
  // first of them is the last entry this op adds: EagerOps lists backward reversed).
  ops.op({}, bwd, T * h * x + (head_trains ? V * h * p.param : 0.0));
  ops.back().host_sync_backward = true;
  ops.op(setup, {});
  // total_n_non_ignore = target_mask.sum().item(): the host reads the count before it
  // launches what follows.
  bool synced      = false;
  auto after_setup = [&] {
    if (!synced)
      ops.back().host_sync_forward = true;
    synced = true;
  };
  // A weight in fp32 under autocast: a trained lm_head's cast for grad_input's GEMM is
  // cached for the forward (kept); a frozen one (QLoRA's, prepare_model_for_kbit_training's
  // fp32) is cast again for each GEMM that reads it.
  const bool casts = p.autocast();
  if (casts && head_trains) {
    ops.op({{"lce.cast_weight", V * h * (p.param + c), 0, generic}}, {}, V * h * c, MemCategory::weights);
    after_setup();
  }
  for (int i = 0; i < chunks; ++i) {
    const std::string at = "lce.chunk" + std::to_string(i);
    // The logits GEMM reads weight.t(), a view, which autocast's cache never holds: cast
    // at every chunk, trained or frozen.
    if (casts) {
      ops.op({{at + ".cast_weight", V * h * (p.param + c), 0, generic}}, {});
      after_setup();
      // the input chunk to the compute dtype
      ops.op({{at + ".cast_input", chunk * h * (x + c), 0, generic}}, {});
    }
    ops.gemm_pass(at + ".logits", chunk, h, V, p.compute_dtype, GemmPass::forward);
    after_setup();
    // liger_cross_entropy_kernel: two passes over each row (max and sum, then softmax -
    // one-hot written over the logits), the row's loss.
    ops.op({{at + ".cross_entropy", 3 * chunk * V * c + 8 * chunk, 5 * chunk * V, generic}}, {});
    if (casts && !head_trains)
      ops.op({{at + ".cast_weight_again", V * h * (p.param + c), 0, generic}}, {});
    ops.gemm_pass(at + ".grad_input", chunk, V, h, p.compute_dtype, GemmPass::forward);
    ops.op({{at + ".copy_grad_input", chunk * h * (c + x), 0, generic}}, {});
    if (head_trains) { // addmm into the fp32 grad_weight, dlogits^T x input: C read and written in fp32
      ops.gemm_pass(at + ".grad_weight", V, chunk, h, p.compute_dtype, GemmPass::forward);
      ops.back().fwd_bytes += V * h * (2 * p.param - c);
    }
  }
  ops.op({{"lce.sum_loss", 4 * T, T, generic}}, {});
}

} // namespace memwall::hf

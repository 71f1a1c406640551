#include "workloads/modelcode/EagerOps.hpp"

namespace memwall {
namespace {

KernelPlan memory_bound(const EagerKernel& k)
{
  KernelPlan p;
  p.name   = k.name;
  p.kclass = KernelClass::elementwise;
  p.dtype  = Dtype::fp32;
  p.family = k.family;
  return p;
}

} // namespace

void EagerOps::op(const std::vector<EagerKernel>& forward, const std::vector<EagerKernel>& backward, double saved,
                  MemCategory category)
{
  size_t first = out_.size();
  for (auto it = backward.rbegin(); it != backward.rend(); ++it) {
    KernelPlan p  = memory_bound(*it);
    p.bwd_bytes   = it->bytes;
    p.bwd_flops   = it->flops;
    p.accumulates = it->accumulates;
    out_.push_back(p);
  }
  for (const EagerKernel& k : forward) {
    KernelPlan p = memory_bound(k);
    p.fwd_bytes  = k.bytes;
    p.fwd_flops  = k.flops;
    out_.push_back(p);
  }
  // Held from before the op's forward until its last backward kernel has run: on its
  // first entry, which the reverse walk reaches last.
  for (size_t i = first; i < out_.size(); ++i)
    out_[i].op_first = static_cast<int>(first);
  if (saved > 0 && out_.size() > first) {
    out_[first].saved_bytes    = saved;
    out_[first].saved_category = category;
  }
  if (!backward.empty()) // the backward entries come first, the one that runs first last of them
    added(first, first + backward.size() - 1);
}

void EagerOps::added(size_t first, size_t runs_first)
{
  previous_first_  = last_first_;
  last_first_      = first;
  last_runs_first_ = runs_first;
}

void EagerOps::gradient_to_previous_op(double bytes)
{
  if (last_runs_first_ == none)
    return;
  KernelPlan& k = out_[last_runs_first_];
  k.grad_bytes += bytes;
  k.grad_until = previous_first_ == none ? -1 : static_cast<int>(previous_first_);
}

KernelPlan& EagerOps::push_gemm(const std::string& name, double tokens, double in, double out, Dtype dtype,
                                bool weight_grad, double saved)
{
  KernelPlan k;
  k.name            = name;
  k.kclass          = KernelClass::gemm;
  k.dtype           = dtype;
  k.fwd_flops       = 2 * tokens * in * out;
  k.shape           = gemm_shape(tokens, out, in);
  double e          = dtype_bytes(dtype);
  k.fwd_bytes       = (in * out + tokens * (in + out)) * e;
  k.bwd_flops       = weight_grad ? 2 * k.fwd_flops : k.fwd_flops;
  k.bwd_model_flops = k.bwd_flops;
  k.bwd_pass        = weight_grad ? GemmPass::backward : GemmPass::input_grad;
  // dgrad reads the output gradient and the weights, writes the input gradient; wgrad
  // reads the output gradient and the saved input, writes the weight gradient.
  k.bwd_bytes =
      (tokens * out + in * out + tokens * in) * e + (weight_grad ? (tokens * out + tokens * in + in * out) * e : 0.0);
  k.saved_bytes = saved;
  k.op_first    = static_cast<int>(out_.size());
  out_.push_back(k);
  return out_.back();
}

void EagerOps::gemm(const std::string& name, double tokens, double in, double out, Dtype dtype, bool weight_grad,
                    double saved)
{
  push_gemm(name, tokens, in, out, dtype, weight_grad, saved);
  added(out_.size() - 1, out_.size() - 1);
}

void EagerOps::gemm_pass(const std::string& name, double tokens, double in, double out, Dtype dtype, GemmPass pass)
{
  KernelPlan& k  = push_gemm(name, tokens, in, out, dtype, pass != GemmPass::input_grad, 0);
  const double e = dtype_bytes(dtype);
  if (pass == GemmPass::forward) { // no backward: not an op a gradient flows back through
    k.bwd_flops = k.bwd_model_flops = k.bwd_bytes = 0;
    return;
  }
  added(out_.size() - 1, out_.size() - 1);
  if (pass == GemmPass::backward) // both gradients: gemm's own entry
    return;
  k.fwd_flops = k.fwd_bytes = 0;
  k.bwd_pass                = pass;
  k.bwd_flops = k.bwd_model_flops = 2 * tokens * in * out;
  // dgrad: the output gradient and the weights in, the input gradient out; wgrad: the
  // output gradient and the saved input in, the weight gradient out.
  k.bwd_bytes = (tokens * out + in * out + tokens * in) * e;
}

void EagerOps::attention(const std::string& name, double flops, double bytes, double saved, Dtype dtype,
                         const std::vector<EagerKernel>& backward_before,
                         const std::vector<EagerKernel>& backward_after)
{
  // The reverse walk meets entries from the last: the helpers that run before the main
  // backward kernel go after it in the list, those that run after it before it.
  auto helpers = [&](const std::vector<EagerKernel>& ks) {
    for (auto it = ks.rbegin(); it != ks.rend(); ++it) {
      KernelPlan p = memory_bound(*it);
      p.bwd_bytes  = it->bytes;
      out_.push_back(p);
    }
  };
  size_t first = out_.size();
  helpers(backward_after);
  KernelPlan k;
  k.name            = name;
  k.kclass          = KernelClass::attention;
  k.dtype           = dtype;
  k.fwd_flops       = flops;
  k.fwd_bytes       = bytes;
  k.bwd_flops       = 2.5 * flops;
  k.bwd_model_flops = 2 * flops;
  k.bwd_bytes       = 2 * bytes;
  out_.push_back(k);
  helpers(backward_before);
  for (size_t i = first; i < out_.size(); ++i)
    out_[i].op_first = static_cast<int>(first);
  out_[first].saved_bytes = saved; // freed once the last helper has run
  added(first, out_.size() - 1);
}

} // namespace memwall

#include "workloads/training/blocks/KernelBuilders.hpp"

namespace memwall::kernels {

// A GEMM of tokens x in -> tokens x out with weights in x out (already split by tp).
// A frozen GEMM (LoRA base) computes only the input gradient in backward; an adapted
// one adds the rank-r adapter's two small GEMMs.
KernelPlan gemm(const std::string& name, double tokens, double in, double out, const StepShape& s, double saved)
{
  KernelPlan k;
  k.name         = name;
  k.kclass       = KernelClass::gemm;
  k.dtype        = s.gemm_dtype;
  k.fwd_flops    = 2 * tokens * in * out;
  k.shape        = gemm_shape(tokens, out, in);
  bool frozen    = s.lora.enabled;
  double weights = in * out * (frozen ? s.frozen_weight_bytes : s.weight_bytes);
  k.fwd_bytes    = weights + tokens * (in + out) * s.act_bytes;
  // Backward: input gradient and weight gradient, each a GEMM of the forward's size;
  // reads the output gradient, the saved input and the weights, accumulates the gradient.
  k.bwd_flops = 2 * k.fwd_flops;
  k.bwd_bytes = 2 * weights + weights + tokens * (2 * in + out) * s.act_bytes;
  if (frozen) {
    k.bwd_pass  = GemmPass::input_grad;
    k.bwd_flops = k.fwd_flops;
    k.bwd_bytes = weights + tokens * (in + out) * s.act_bytes;
  }
  if (s.lora.targets_kernel(name)) {
    double r       = static_cast<double>(s.lora.rank);
    double adapter = 2 * tokens * r * (in + out);
    k.fwd_flops += adapter;
    k.bwd_flops += 2 * adapter;
    k.fwd_bytes += r * (in + out) * s.weight_bytes + tokens * r * s.act_bytes;
    k.bwd_bytes += 3 * r * (in + out) * s.weight_bytes + 2 * tokens * r * s.act_bytes;
    saved += tokens * r * s.act_bytes; // the adapter's down-projection output
  }
  k.bwd_model_flops = k.bwd_flops;
  k.saved_bytes     = saved;
  return k;
}

namespace {

KernelPlan memory_bound(const std::string& name)
{
  KernelPlan k;
  k.name   = name;
  k.kclass = KernelClass::elementwise;
  k.dtype  = Dtype::fp32;
  return k;
}

} // namespace

// An elementwise or normalization kernel reading `in` and writing `out` elements.
KernelPlan pointwise(const std::string& name, KernelFamily family, double in, double out, double flops_per_elem,
                     const StepShape& s, double saved)
{
  KernelPlan k = memory_bound(name);
  k.family     = family;
  k.fwd_flops  = flops_per_elem * in;
  k.fwd_bytes  = (in + out) * s.act_bytes;
  // Backward reads the output's gradient and the saved input (or output), writes the
  // input's gradient.
  k.bwd_flops   = 2 * k.fwd_flops;
  k.bwd_bytes   = (out + 2 * in) * s.act_bytes;
  k.saved_bytes = saved;
  return k;
}

KernelPlan dropout(const std::string& name, double elems, const StepShape& s, double saved)
{
  // Forward reads the input and writes the output and a 1-byte mask; backward reads the
  // gradient and the mask and writes the gradient.
  KernelPlan k = pointwise(name, KernelFamily::generic, elems, elems, 2, s, saved);
  k.fwd_bytes  = (2 * s.act_bytes + 1) * elems;
  k.bwd_bytes  = k.fwd_bytes;
  return k;
}

// The residual add after the projection and after the MLP: with dropout, Megatron's
// fused bias-dropout-add (read branch and residual, write sum and a 1-byte mask; its
// backward reads gradient and mask); without, a plain add whose backward is free.
KernelPlan residual_add(const std::string& name, const ModelSpec& m, double elems, double e)
{
  KernelPlan k = forward_only(name, 3 * elems * e, elems);
  k.family     = KernelFamily::residual;
  if (m.dropout) {
    k.fwd_bytes += elems;
    k.bwd_bytes   = (2 * e + 1) * elems;
    k.bwd_flops   = elems;
    k.saved_bytes = elems;
  }
  return k;
}

// A linear layer's bias gradient: the output gradient summed over tokens, its own
// kernel in backward (runs beside the GEMM's, listed after it in forward order).
void bias_grad(std::vector<KernelPlan>& ks, bool bias, const std::string& gemm_name, double out_elems, double e)
{
  if (bias)
    ks.push_back(backward_only(gemm_name + ".bias_grad", out_elems * e, out_elems));
}

// Megatron's f/g operators around a column-split ... row-split pair. Without sequence
// parallelism: all-reduce after the row-split GEMM in forward and after the column-split
// GEMM's input gradient in backward. With it: all-gather before the column-split GEMM
// (again in backward, since only the split input is saved) and reduce-scatter after the
// row-split one, and the transposes in backward.
void tp_pair(KernelPlan& norm, KernelPlan& column, KernelPlan& row, double full_act, const StepShape& s)
{
  if (s.tp == 1)
    return;
  if (!s.sp) {
    row.fwd_after    = {CollectiveKind::all_reduce, full_act};
    column.bwd_after = {CollectiveKind::all_reduce, full_act};
    return;
  }
  norm.fwd_after    = {CollectiveKind::all_gather, full_act};
  row.fwd_after     = {CollectiveKind::reduce_scatter, full_act};
  row.bwd_before    = {CollectiveKind::all_gather, full_act};
  column.bwd_before = {CollectiveKind::all_gather, full_act};
  column.bwd_after  = {CollectiveKind::reduce_scatter, full_act};
}

size_t index_of(const std::vector<KernelPlan>& ks, const std::string& name)
{
  for (size_t i = 0; i < ks.size(); ++i)
    if (ks[i].name == name)
      return i;
  return ks.size();
}

KernelPlan forward_only(const std::string& name, double bytes, double flops)
{
  KernelPlan k = memory_bound(name);
  k.fwd_bytes  = bytes;
  k.fwd_flops  = flops;
  return k;
}

KernelPlan backward_only(const std::string& name, double bytes, double flops)
{
  KernelPlan k = memory_bound(name);
  k.bwd_bytes  = bytes;
  k.bwd_flops  = flops;
  return k;
}

KernelPlan grad_sum(const std::string& name, double elems, double e)
{
  KernelPlan k = backward_only(name, 3 * elems * e, elems); // read two, write one
  k.family     = KernelFamily::residual;
  return k;
}

} // namespace memwall::kernels

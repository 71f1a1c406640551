#pragma once
// Builders of KernelPlans shared by the blocks (BlockKernels.cpp, EdgeBlocks.cpp).
#include "workloads/training/blocks/BlockKernels.hpp"

namespace memwall::kernels {

// Replicated tensors are split by tp only under sequence parallelism.
inline double rep_div(const StepShape& s) { return s.sp ? static_cast<double>(s.tp) : 1.0; }
inline double tp(const StepShape& s) { return static_cast<double>(s.tp); }

// A GEMM of tokens x in -> tokens x out with weights in x out (already split by tp),
// forward and backward (input and weight gradients), saving `saved` bytes.
KernelPlan gemm(const std::string& name, double tokens, double in, double out, const StepShape& s, double saved);

// An elementwise or normalization kernel of `family` reading `in` and writing `out`
// elements in forward; its backward reads `out` gradients and `in` saved elements,
// writes `in`.
KernelPlan pointwise(const std::string& name, KernelFamily family, double in, double out, double flops_per_elem,
                     const StepShape& s, double saved);

// Dropout over `elems` activations with its 1-byte mask.
KernelPlan dropout(const std::string& name, double elems, const StepShape& s, double saved);

// A memory-bound kernel that runs in one direction only (the other has no work): a
// gradient accumulation in backward, a cast in forward. Bytes read plus written.
// Generic; a gradient sum at a residual fork is grad_sum.
KernelPlan forward_only(const std::string& name, double bytes, double flops);
KernelPlan backward_only(const std::string& name, double bytes, double flops);
// The sum of the two gradients of `elems` elements meeting at a residual fork, in backward.
KernelPlan grad_sum(const std::string& name, double elems, double e);

// The residual add after attention and after the MLP (Megatron's fused bias-dropout-add
// when the model has dropout).
KernelPlan residual_add(const std::string& name, const ModelSpec& m, double elems, double e);

// A linear layer's bias gradient in backward, when it has a bias.
void bias_grad(std::vector<KernelPlan>& ks, bool bias, const std::string& gemm_name, double out_elems, double e);

// Megatron's tensor-parallel collectives around a column-split ... row-split GEMM pair.
void tp_pair(KernelPlan& norm, KernelPlan& column, KernelPlan& row, double full_act, const StepShape& s);

size_t index_of(const std::vector<KernelPlan>& ks, const std::string& name);

// The mixture-of-experts half of a layer (MoeKernels.cpp): norm, router, dispatch
// all-to-all, the rank's experts, combine all-to-all, shared experts, residual.
void moe_mlp_half(BlockPlan& b, const ModelSpec& m, const StepShape& s, double T);

} // namespace memwall::kernels

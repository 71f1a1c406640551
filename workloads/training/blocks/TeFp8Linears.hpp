#pragma once
// FP8 as Transformer Engine 1.x runs a Megatron-Core layer's Linear GEMMs on Hopper
// (delayed scaling, HYBRID formats; calibration/research/te-fp8.md sections 1 and 6):
//   te.LayerNormLinear (a GEMM right after a norm: QKV, FC1): the norm writes its output
//     in FP8 (1 B), which sequence parallelism all-gathers in FP8, and backward transposes
//     the gathered FP8 input for the weight gradient (fp8_transpose, R 1 W 1);
//   te.Linear (proj, FC2): the BF16 input cast and transposed in one kernel (R 2, W 1 + 1);
//   each GEMM's input is saved for backward in FP8 (1 B an element);
//   backward casts and transposes the output gradient to E5M2 (R 2, W 1 + 1, the bias
//     gradient fused in); a row-parallel GEMM under sequence parallelism casts it first
//     (R 2, W 1), all-gathers it in FP8 and transposes it after (R 1, W 1), its bias
//     gradient apart;
//   each weight cast and transposed once a step, on the first micro-batch (is_first_microbatch:
//     R 2, W 1 + 1), into a cached FP8 copy and transpose kept beside the BF16 weight
//     (2 B a weight element, BlockPlan::cached_weight_bytes);
//   the GEMMs read FP8 operands and write BF16.
// The router stays BF16. Not modelled: the amax reductions and scale updates (two
// all-reduces of a few KB per micro-batch and chunk, asynchronous under
// NVTE_ASYNC_AMAX_REDUCTION); routed experts' grouped GEMMs (TEGroupedLinear: FP8 GEMMs
// at the fp8 rate, without their casts or cached weights); the weight gradient's main
// grad taken as fp32 (bf16 under grad_reduce_in_fp32: false). The transposes of a gathered
// input or gradient run just before the all-gather on the compute stream where TE runs them
// after it, before the weight gradient: the same work, one collective earlier.
#include "workloads/training/blocks/BlockKernels.hpp"

namespace memwall {

// Rewrites layer block `b`, built with s.gemm_dtype fp8, as Transformer Engine runs it.
void te_fp8_linears(BlockPlan& b, const StepShape& s);

} // namespace memwall

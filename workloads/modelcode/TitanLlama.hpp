#pragma once
// torchtitan's Llama (torchtitan/models/llama3/model.py) as it runs in eager PyTorch
// under FSDP2's mixed precision: the unsharded parameters are bf16 and every op computes
// in them (no autocast, no casts of weights or inputs); torch's fused RMSNorm
// (nn.RMSNorm: one kernel forward, two backward); rotary embeddings through complex
// numbers in fp32 (q and k cast up, multiplied by freqs_cis, cast back); GQA's keys and
// values repeated to every head (repeat_kv copies them) before SDPA's flash kernel;
// SiLU times w3; bf16 residual adds; the loss on logits cast to fp32.
//
// With `per_op_checkpoint` (torchtitan's selective "op" activation checkpointing) each
// layer keeps its input and the outputs of every other matmul (wq, wv, w1, w2: the odd
// ones of its seven) and of SDPA; backward recomputes the rest of the layer first.
#include "workloads/modelcode/HfModules.hpp"

namespace memwall::titan {

// Each block as one rank of a tensor-parallel group of `tp` runs it under torchtitan's
// plan (parallelize.py apply_tp; tp 1: whole): the norms and residuals
// sequence-parallel (SequenceParallel), wq, wk, wv, w1 and w3 column-parallel after
// their input's all-gather, wo and w2 row-parallel with their outputs reduce-scattered,
// the embedding row-parallel over the vocabulary, the output column-parallel with the
// loss parallel over it (loss_parallel); and as one rank of a context-parallel group of
// `cp`, holding T of the sequence's T x cp tokens (hf::Tokens: this rank's), attending
// over all of them with K and V all-gathered (TitanLlama.cpp).
struct Split {
  double tp = 1, cp = 1;
};
// How a block's ops become kernels: eager PyTorch, op by op, or torch.compile's Inductor
// (torchtitan's apply_compile: each transformer block compiled on its own, the
// embedding, the output and the loss left eager). Inductor leaves the matmuls and SDPA
// to cuBLAS and the flash kernel (extern kernels; the default mode fuses no epilogues)
// and fuses the pointwise ops and reductions between them into one kernel per region,
// which reads the region's inputs once and writes only what leaves it: the residual add
// with the norm after it, GQA's repeat of k with rotary's cast back (rotary's complex
// product stays ATen's: Inductor generates no code for complex tensors), SiLU with the
// product, and in backward the gradient sums with the norms' backward.
//
// Eager RMSNorm is ATen's fused kernel from torch 2.9 (aten::_fused_rms_norm: one kernel
// forward, two backward); before, torchtitan's RMSNorm (norms.py, 2024: _norm(x.float())
// .type_as(x) * weight) and torch's composite nn.RMSNorm launch LlamaRMSNorm's op
// sequence (hf::rms_norm: the stream cast to fp32, eight kernels forward, nineteen back).
//
// With `float8` (torchao's Float8Linear, tensorwise dynamic scaling, as torchtitan's float8
// converter swaps every block Linear; the output layer stays bf16; under Inductor only)
// each GEMM reads FP8 operands at the FP8 rate: its input and weight cast to e4m3 after
// an absolute-maximum reduction (fused into the kernel that wrote the input where Inductor
// wrote it; one cast for the inputs wq, wk and wv share, one for w1 and w3), the output
// gradient cast to e5m2 in both layouts the two backward GEMMs read, the input and
// weight transposed for the weight and input gradients (_scaled_mm wants the second
// operand column-major). The amaxes are a few bytes; torchtitan's per-op checkpointing
// saves them and the matmuls' bf16 outputs as without Float8.
//
// With `async_tp` (torchtitan's enable_async_tensor_parallel: torch's micro-pipeline TP,
// under Inductor only) the tp all-gathers run beside the GEMMs they feed and the
// row-parallel reduce-scatters beside their GEMM's chunks (TitanLlama.cpp says which).
struct Lowering {
  bool inductor       = false;
  bool fused_rms_norm = true;
  bool float8         = false;
  bool async_tp       = false;
};
BlockPlan layer(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, int64_t layer, bool per_op_checkpoint,
                Split split = {}, Lowering lowering = {});
BlockPlan embedding(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, Split split = {});
BlockPlan head(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, Split split = {},
               Lowering lowering = {});

} // namespace memwall::titan

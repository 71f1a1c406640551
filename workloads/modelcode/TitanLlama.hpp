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
BlockPlan layer(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, int64_t layer, bool per_op_checkpoint,
                Split split = {});
BlockPlan embedding(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, Split split = {});
BlockPlan head(const ModelSpec& m, const hf::Tokens& t, const hf::Precision& p, Split split = {});

} // namespace memwall::titan

#pragma once
// A Hugging Face causal LM as a whole: which of transformers' modelling files its blocks
// follow, its blocks in a given precision, and its parameter tensors in the order
// forward uses them. Shared by the stacks that run transformers' modules (`pytorch`,
// `deepspeed` with modules: transformers).
#include "workloads/modelcode/HfModules.hpp"

namespace memwall::hf {

// modeling_llama.py's decoders (and those that copy it: Mistral, Qwen2, Qwen3, their
// mixtures of experts Mixtral, Qwen2-MoE and Qwen3-MoE), Phi-3's fused version of it,
// Gemma's, GPT-NeoX's, modeling_gpt2.py's, modeling_opt.py's, gpt-oss's and DeepSeek-V3's;
// none for anything else.
enum class Arch { none, llama, phi3, gemma, neox, gpt2, opt, gpt_oss, deepseek };
Arch architecture(const ModelSpec& m);
// The model's final norm (Gemma's, an RMSNorm or a LayerNorm).
NormFn final_norm_of(const ModelSpec& m);
// Whether Liger's kernels are modelled for the model (Precision::liger): Llama's own
// modules (Llama, Mistral, Qwen2), no experts, no head norms. "" if so, else why not.
std::string liger_refusal(const ModelSpec& m);
// The projections PEFT can adapt in the architecture's layers, by transformers' module
// names (Phi-3's fused qkv_proj and gate_up_proj; the Llama family's and Gemma's seven).
std::vector<std::string> lora_modules(Arch a);
// torch.utils.checkpoint around a decoder layer (gradient checkpointing; BlockPlan's
// checkpoint_stop and checkpoint_output). Reentrant (CheckpointFunction) reruns the
// layer whole under no graph and holds the rerun output, the stream's width, while the
// nested backward runs. Non-reentrant stops the rerun once every saved tensor is packed
// again: after the last kernel that saves one (a GEMM at least its weight), before the
// residual add that makes the output (whose bytes the next layer's norm keeps).
void checkpoint_layer(BlockPlan& b, bool reentrant);
// What `architecture` recognises, in words (for refusals).
const char* modelled_architectures();

BlockPlan model_embedding(const ModelSpec& m, const Tokens& t, const Precision& p);
BlockPlan model_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);
BlockPlan model_head(const ModelSpec& m, const Tokens& t, const Precision& p);

// Elements of each nn.Parameter of a block, in the order its modules run forward
// (named_parameters of each module): what DeepSpeed's ZeRO-3 gathers one by one.
std::vector<double> embedding_tensors(const ModelSpec& m);
std::vector<double> layer_tensors(const ModelSpec& m);
std::vector<double> head_tensors(const ModelSpec& m);

} // namespace memwall::hf

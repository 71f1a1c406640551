#pragma once
// Hugging Face transformers' modules as eager PyTorch runs them under torch.autocast,
// op by op (EagerOps.hpp): the kernels each launches forward and backward and what
// autograd keeps. Read from transformers' modeling_llama.py (LlamaRMSNorm,
// apply_rotary_pos_emb, LlamaMLP, sdpa_attention_forward, ForCausalLMLoss) and checked
// against a recorded training step of a Llama-3.2-1B-shaped model on an H100
// (tests/data/traces/h100-llama1b-hf-train.json.gz; tests/pytorch_stack_test.cpp).
//
// With fp32 parameters under autocast the residual stream stays fp32 (the embedding
// table is fp32, and adding a bf16 branch to it promotes), the norms compute in fp32,
// and every linear casts its weight (once a forward: autocast's cache, kept for
// backward) and its input (again for each linear that reads it) to the compute dtype.
#include "workloads/model/ModelSpec.hpp"
#include "workloads/modelcode/EagerOps.hpp"
#include "workloads/modelcode/TransformersRelease.hpp"

namespace memwall::hf {

// Element sizes of one eager step: the parameters' (and so the residual stream's and the
// norms') and autocast's compute dtype.
struct Precision {
  double param        = 4;
  double compute      = 2;
  Dtype compute_dtype = Dtype::bf16;
  // The model builds a DynamicCache as it runs (GPT2Model's use_cache, its config's
  // default, in training too unless gradient checkpointing turns it off); false also for
  // generate()'s forward, whose cache the serving engine models itself.
  bool builds_cache = false;
  // PEFT (lora.enabled): every projection frozen, stored at base_weight bytes an element
  // (the model's dtype; bitsandbytes' NF4 under QLoRA, dequantised to the compute dtype at
  // each use), with rank-r adapters on lora.targets kept in fp32 (get_peft_model's
  // autocast_adapter_dtype) and cast under autocast like any weight.
  LoraConfig lora;
  double base_weight = 0;
  // Liger's kernels in place of transformers' (the Trainer's use_liger_kernel, a
  // Llama-family model: HfLiger.cpp): RMSNorm, SwiGLU and RoPE fused, lm_head and the loss
  // as the fused linear cross entropy that never holds the logits.
  bool liger = false;
  // Where the release casts the logits to fp32 and whether its loss copies them shifted
  // (lm_head's causal_lm_loss).
  LossPath loss = LossPath::shifted_labels;
  bool autocast() const { return param != compute; }
};

// Tokens of a micro-batch: b sequences of s tokens, after `cached` tokens of each already
// in the cache (generate()'s decode; 0 in training).
struct Tokens {
  double b = 1, s = 1, cached = 0;
  double T() const { return b * s; }
};
inline Tokens tokens(const StepShape& shape)
{
  return {static_cast<double>(shape.micro_batch), static_cast<double>(shape.seq_len)};
}

// A decoder layer's block before its kernels: "L<layer>", its parameters, and its input
// of `input_bytes` (what full recompute keeps).
BlockPlan layer_plan(const ModelSpec& m, int64_t layer, double input_bytes);

// LlamaRMSNorm over T x h elements of the stream: pow, mean, + eps, rsqrt, x * rsqrt,
// weight * x; backward 16 kernels. Keeps x * rsqrt and rsqrt (x is its producer's).
void rms_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p);
// Qwen3's q_norm and k_norm: LlamaRMSNorm over each head's D elements of a projection's
// output in the compute dtype (cast up, normalised, cast back, times the fp32 weight: an
// fp32 output under autocast); the norm is its input's only user.
void head_rms_norm(EagerOps& ops, const std::string& name, double T, double heads, double D, const Precision& p);
// Either: rows x h elements of `e` bytes each, the weight (and so the output and its
// gradient) of `w`; `other_users`: the input's gradient from elsewhere is added to the
// norm's (the residual stream's).
// `frozen`: the weight has no gradient (PEFT).
void rms_norm_of(EagerOps& ops, const std::string& name, double rows, double h, double e, double w, bool other_users,
                 bool frozen = false);
// Whether rms_norm's backward reads the stream tensor it was given (an fp32 stream; on a
// bf16 or fp16 one it keeps its own fp32 copy instead).
inline bool rms_norm_reads_its_input(const Precision& p) { return p.param == 4; }
// Bytes of an element of a projection's output: the compute dtype's, except under QLoRA
// with an fp32 input (bitsandbytes' Linear4bit returns its input's dtype: q, k, v, gate,
// up and down read the fp32 stream or an fp32 product after prepare_model_for_kbit_training).
inline double projection_output_bytes(const Precision& p, bool fp32_input)
{
  return p.lora.enabled && p.lora.nf4_base && p.autocast() && fp32_input ? p.param : p.compute;
}
// A cast of `elems` elements from `from` to `to` bytes each (a kernel of the modules' lists).
EagerKernel cast_kernel(const std::string& name, double elems, double from, double to);
// `linear` under PEFT (HfPeft.cpp): the frozen projection and its adapter where it has one.
void peft_linear(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input,
                 const Precision& p);
// The LoRA target group (LoraConfig's qkv, proj, mlp.up, mlp.down) and transformers'
// module name (q_proj, gate_up_proj, ...) of a projection by its name in these modules
// ("attn.q", "self_attn.qkv_proj", ...); "" for one no target names (lm_head).
struct LoraTarget {
  std::string group, module;
};
LoraTarget lora_target(const std::string& projection);
// A linear layer under autocast: cast the weight (kept for backward: autocast's cache),
// cast the input unless it is in the compute dtype already (kept for the weight
// gradient), the GEMM; backward the GEMM's two gradients, the input gradient cast back,
// the weight gradient cast to the parameter's dtype (AccumulateGrad). Under PEFT
// (Precision::lora) the weight is frozen: the GEMM's input gradient alone, nothing kept for
// it, an NF4 weight dequantised before each use (forward, backward, a recomputed forward);
// a targeted projection adds its adapter: lora_B(lora_A(x)) * scaling added to the output.
void linear(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input,
            const Precision& p);
// apply_rotary_pos_emb on one of q or k (T x width): x * cos + rotate_half(x) * sin,
// promoted to fp32 by the fp32 cos and sin; backward 11 kernels.
void rotary(EagerOps& ops, const std::string& name, double T, double width, const Precision& p);
// The attention of a layer through torch's SDPA (cuDNN's flash kernel on Hopper): q and
// k cast to the compute dtype where rotary embeddings left them in fp32, the kernel
// (causal), its backward helpers; keeps q, k, v, the output and the log-sum-exp.
void sdpa(EagerOps& ops, const std::string& name, const Tokens& t, const ModelSpec& m, const Precision& p,
          bool rotated);
// residual + branch: the stream's dtype plus the branch's, promoted; backward casts the
// gradient for the branch. Keeps the sum where `kept`: where the next norm reads it in
// backward (LayerNorm, a fused RMSNorm, rms_norm on an fp32 stream).
void residual_add(EagerOps& ops, const std::string& name, double T, double h, const Precision& p, bool kept);
// The same with the stream's and the branch's element bytes given (an fp32 branch: no cast).
void residual_add_of(EagerOps& ops, const std::string& name, double T, double h, double stream, double branch,
                     bool kept);
// The sum of two gradients of one tensor (autograd's accumulation where it has two users).
void grad_accumulate(EagerOps& ops, const std::string& name, double elems, double element_bytes);
// A DynamicCache's update in a training forward (Precision::builds_cache): k and v, T x
// `kv_width` each, catted onto the layer's empty cache, SDPA reading the copies; backward
// clones their gradients back into the projections' layout. The copies are kept for SDPA
// in place of the originals unless something else holds those (`kept_beside`: bytes).
void dynamic_cache_update(EagerOps& ops, const std::string& name, double T, double kv_width, const Precision& p,
                          double kept_beside);
// The same update where k leaves rotary embeddings in fp32 (an fp32 stream under
// autocast): the cache takes k's dtype, so k is catted in fp32 and v cast up into it, and
// SDPA's autocast casts v back down; backward casts dv up and down again and clones it
// for v's view. The fp32 k and v (8 T kv_width bytes) live until the model's forward
// returns; SDPA keeps its own casts. `clone_dv`: v is a strided view of its projection
// (Llama's transpose; not GPT-NeoX's chunk of a fused projection, whose gradient is cloned whole).
// `sdpa_casts_v`: SDPA reads v (autocast casts it); an eager attention casts what it reads itself.
void fp32_cache_update(EagerOps& ops, const std::string& name, double T, double kv_width, bool clone_dv = true,
                       bool sdpa_casts_v = true);
// A rotary family's DynamicCache (LlamaModel's and those like it: use_cache, in training
// too unless gradient checkpointing turns it off): fp32_cache_update where rotary leaves k in
// fp32 (an fp32 stream under autocast), else dynamic_cache_update; none without a cache.
void rotated_cache_update(EagerOps& ops, const std::string& name, double T, double kv_width, const Precision& p,
                          bool clone_dv = true, bool sdpa_casts_v = true);
// The rotary embedding of gpt-oss and DeepSeek-V3 on one of q or k (T x width): each head's
// two halves (or even and odd elements) rotated with half-width cos and sin, catted.
void halves_rotary(EagerOps& ops, const std::string& name, double T, double width, const Precision& p);
// nn.LayerNorm over T x h of the stream: ATen's fused kernel (keeps mean and rstd);
// backward the input gradient and the weight and bias gradients.
void layer_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p);
// A linear layer with a bias, which ATen runs as addmm (transformers' Conv1D; nn.Linear
// with bias on a contiguous input) under autocast: `linear` plus the bias cast forward (the
// bias rides the GEMM's epilogue) and, backward, its gradient summed over the tokens and
// cast back.
void addmm_linear(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input,
                  const Precision& p);
// A projection with a bias where the config gives it one (addmm_linear), else `linear`.
void projection(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input, bool bias,
                const Precision& p);
// nn.Dropout over `elems` elements of `bytes` each: ATen's fused dropout writes the
// output and a one-byte mask (kept); backward scales the gradient by the mask.
void dropout(EagerOps& ops, const std::string& name, double elems, double bytes);
// NewGELUActivation (gelu_new, GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// as transformers writes it, eight elementwise kernels over T x f in the compute dtype,
// eleven backward; keeps x, the tanh, 0.5 x, 1 + tanh and the output (the next GEMM's input).
void gelu_new(EagerOps& ops, const std::string& name, double T, double f, const Precision& p);

// The blocks of GPT-2 (GPT2LMHeadModel: learned positions, LayerNorm, Conv1D, gelu_new,
// dropout, the head tied to the token embedding).
BlockPlan gpt2_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);
BlockPlan gpt2_embedding(const ModelSpec& m, const Tokens& t, const Precision& p);
// A learned-positions embedding (GPT-2's, OPT's): the token table's gather, the positions'
// (after `position_ids`, the kernels that compute them), their sum, dropout; keeps the
// first layer's input.
BlockPlan learned_positions_embedding(const ModelSpec& m, const Tokens& t, const Precision& p,
                                      const std::string& tokens, const std::string& positions,
                                      const std::vector<EagerKernel>& position_ids);
// The embedding table's backward: its dense gradient zeroed, the ids sorted (CUB) and
// the rows' gradients summed per id and scattered in (embedding_dense_backward), then
// added to the head's gradient of a tied table, or to .grad from the second micro-batch on.
std::vector<EagerKernel> embedding_backward(const std::string& name, double T, double rows, double h, double e,
                                            bool tied);
// A norm over T x h of the stream (rms_norm, layer_norm).
using NormFn = void (*)(EagerOps&, const std::string&, double, double, const Precision&);
// A causal LM's head block (HfHead.cpp): the final norm, lm_head (no bias; a tied table is
// cast per forward like any weight) and the loss.
BlockPlan lm_head(const ModelSpec& m, const Tokens& t, const Precision& p, NormFn final_norm);
// The language-model loss (ForCausalLMLoss) over T x V logits in the compute dtype,
// upcast to fp32: log_softmax (kept) and nll_loss, and their backward.
void causal_lm_loss(EagerOps& ops, const Tokens& t, double V, const Precision& p);

// The blocks of OPT (OPTForCausalLM: learned positions with an offset of 2, LayerNorm,
// nn.Linear with biases, ReLU, the head tied to the token embedding).
BlockPlan opt_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);
BlockPlan opt_embedding(const ModelSpec& m, const Tokens& t, const Precision& p);

// Gemma's RMSNorm over rows x h of elements of `e` bytes: in fp32 (a bf16 input cast up
// first, the result cast back last), the weight applied as 1 + w; keeps x * rsqrt, rsqrt
// and a bf16 input's fp32 copy. `other_users` as rms_norm_of's.
void gemma_rms_norm(EagerOps& ops, const std::string& name, double rows, double h, double e, bool other_users,
                    bool frozen = false);
// The final norm of a Gemma model (NormFn): gemma_rms_norm on the stream.
void gemma_final_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p);
// A Gemma 2 or 3 decoder layer (HfGemma.cpp).
BlockPlan gemma_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);

// A GPT-NeoX decoder layer (Pythia): LayerNorm, one fused query_key_value with biases,
// partial rotary, exact GELU, a parallel residual (HfNeox.cpp).
BlockPlan neox_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);

// A Phi-3 decoder layer: Llama's with one qkv_proj and one gate_up_proj (HfPhi3.cpp).
BlockPlan phi3_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);

// LlamaMLP over T tokens of h: down(act(gate(x)) * up(x)), f wide, each projection
// casting its own copy of x under autocast (the caller sums their input gradients).
void gated_mlp(EagerOps& ops, const std::string& name, double T, double h, double f, bool bias, const Precision& p);
// A sparse MoE block in place of the MLP (HfMoe.cpp: Mixtral's, Qwen2-MoE's, Qwen3-MoE's,
// through transformers' grouped_mm experts), on the normalised stream; returns the
// gradients it has alive at once in backward beyond what it keeps (bytes).
double sparse_moe_block(EagerOps& ops, const ModelSpec& m, const Tokens& t, const Precision& p);
// The MoE block's router over T tokens (HfMoeRouter.cpp: Mixtral's and Qwen's softmax
// top-k, gpt-oss's top-k softmax, DeepSeek-V3's group-limited sigmoid); returns the
// element bytes of the routing weights it hands the experts.
double moe_router(EagerOps& ops, const ModelSpec& m, double T, const Precision& p);

// A gpt-oss decoder layer (HfGptOss.cpp): biased projections, rotary on each head's two
// halves, eager attention with a learned sink per head, biased experts.
BlockPlan gpt_oss_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);
// gpt-oss's eager_attention_forward over q (rotary's output), k of `k_bytes` and v of
// `v_bytes` an element: the scores per head with the sink column, in the stream's dtype
// from the mask's add on; returns what its backward holds at once beyond what it keeps.
double sink_attention(EagerOps& ops, const std::string& name, const Tokens& t, const ModelSpec& m, const Precision& p,
                      double k_bytes, double v_bytes);
// A DeepSeek-V3 decoder layer (HfDeepseek.cpp): multi-head latent attention, then the
// dense MLP in the first layers and the group-routed experts with a shared expert after.
BlockPlan deepseek_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);

// Liger-Kernel's replacements (HfLiger.cpp; calibration/research/peft-qlora-liger.md
// section 5). LigerRMSNorm over T x h of the stream: one kernel each way (and the weight
// gradient's sum over its per-SM partials), keeping the fp32 rstd; its input stays alive
// through the residual stream. The output is in the input's dtype.
void liger_rms_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p);
// LigerRopeFunction on q and k together, in place: one kernel each way, nothing kept.
void liger_rope(EagerOps& ops, const std::string& name, double T, double q_width, double kv_width, const Precision& p);
// LigerSiLUMulFunction: silu(gate) * up in one kernel, keeping gate and up; backward
// recomputes silu and writes both gradients into their buffers.
void liger_swiglu(EagerOps& ops, const std::string& name, double T, double f, const Precision& p);
// LigerFusedLinearCrossEntropy over T tokens of h and V words: in chunks of
// next_pow2(T / ceil(V / h)) tokens the logits (bf16), the loss and its gradient in place,
// the input's gradient and (a trained lm_head) the weight's computed in forward and held
// to backward, which only scales them.
void liger_linear_cross_entropy(EagerOps& ops, double T, double h, double V, bool head_trains, const Precision& p);

// The blocks of a Llama-family decoder (RMSNorm, rotary, gated MLP).
BlockPlan llama_layer(const ModelSpec& m, const Tokens& t, const Precision& p, int64_t layer);
BlockPlan llama_embedding(const ModelSpec& m, const Tokens& t, const Precision& p);

} // namespace memwall::hf

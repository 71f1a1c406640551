// Hugging Face transformers' generate() in eager PyTorch, as its source runs it
// (generation/utils.py GenerationMixin._sample with greedy decoding, cache_utils.py
// DynamicCache, the Llama, GPT-2 and OPT modelling files with attn_implementation "sdpa"):
//   - the model in its torch_dtype (bf16 or fp16, no autocast): every module's kernels one
//     by one, from the same inventories the training stacks use (HfModules.hpp);
//   - DynamicCache.update: torch.cat of each layer's K (and V) cache with the new tokens'
//     every step, onto an empty tensor in the prefill: the whole cache read and written
//     again each token;
//   - logits_to_keep = 1: the final norm over every token, lm_head over the last one;
//   - generate's own step: the logits copied to fp32, argmax, the finished rows padded,
//     the token appended to input_ids and the attention mask, the stopping criteria;
//   - one static batch, prompts padded to the longest, run until every row is done.
// Host work (Python, dispatch, launches) is not modelled: an eager decode's host is slower
// than its GPU, so each kernel is host-paced (Op::host_paced) and the iteration takes
// its kernels' own GPU time, what a profiler sums, without the idle gaps between them.
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"
#include "workloads/modelcode/HfModel.hpp"
#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>
#include <map>

namespace memwall {
namespace {

KernelCost forward_cost(const KernelPlan& k)
{
  KernelCost c;
  c.name       = k.name;
  c.kclass     = k.kclass;
  c.family     = k.family;
  c.dtype      = k.dtype;
  c.flops      = k.fwd_flops;
  c.bytes      = k.fwd_bytes;
  c.shape      = k.shape;
  c.host_paced = true;
  return c;
}

void append_forward(const std::vector<KernelPlan>& kernels, std::vector<KernelCost>& out)
{
  for (const KernelPlan& k : kernels)
    if (k.runs(true))
      out.push_back(forward_cost(k));
}

// Latent attention (the cache holds the compressed kv, rebuilt per head every forward)
// and gpt-oss's eager attention (scores over every cached key) grow and read their
// DynamicCache inside the layer's own kernels; the others' SDPA is timed by eager_layer.
bool layer_reads_cache(const ModelSpec& m) { return m.mla.enabled() || m.attention_sinks; }

// Layer `l`'s kernels for b sequences of s new tokens after t.cached in its cache.
std::vector<KernelCost> eager_layer(const ModelSpec& m, const hf::Precision& p, hf::Tokens t, int64_t l)
{
  const double b = t.b, s = t.s, L = t.cached, e = p.param, T = t.T();
  const double q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double o = static_cast<double>(m.attn_out_dim());
  const bool own = layer_reads_cache(m);
  if (!own)
    t.cached = 0; // SDPA is sized here
  std::vector<KernelCost> layer;
  for (const KernelPlan& k : hf::model_layer(m, t, p, l).kernels) {
    if (!k.runs(true))
      continue;
    if (k.kclass != KernelClass::attention || own) {
      layer.push_back(forward_cost(k));
      continue;
    }
    // DynamicCache.update before attention: torch.cat reads the L cached and s new
    // tokens' K (then V) and writes all L + s into a new tensor.
    double cat = 2 * b * (L + s) * kv * e;
    std::vector<KernelPlan> update;
    EagerOps(update).op({{"attn.cache_cat_k", cat}, {"attn.cache_cat_v", cat}}, {});
    append_forward(update, layer);
    KernelCost a = forward_cost(k);
    if (L > 0) { // s queries over the L cached keys and, causally, the s new ones
      double pairs = b * (s * L + s * (s + 1) / 2);
      a.flops      = 2 * pairs * (q + o);
      a.bytes      = (2 * T * q + 2 * b * (L + s) * kv) * e;
    }
    layer.push_back(a);
  }
  return layer;
}

class HfEngine : public InferenceEngine {
public:
  explicit HfEngine(bool deepspeed) : deepspeed_(deepspeed) {}
  // Offloaded layers reach the GPU as the hooks that run them fetch them: Accelerate's
  // AlignDevicesHook copies each module's weights with a synchronous .to() from the
  // pageable CPU state dict before its forward (accelerate/hooks.py); ZeRO-3's
  // parameter offload (DeepSpeed ZeRO-Inference) fetches each module's from pinned
  // buffers and the host waits for it before launching the module (its prefetch bucket of
  // about one h x h matrix hides little), the embedding table included. Both fetch a
  // layer's weights as its turn comes, every forward.
  WeightStreaming weight_streaming(const InferenceConfig&) const override
  {
    WeightStreaming w;
    w.ahead  = false;
    w.pinned = deepspeed_;
    w.tables = deepspeed_;
    return w;
  }
  std::string default_scheduler(const std::string&) const override { return "static"; }
  int64_t default_block_size() const override { return 1; }
  // generate() prefills whole prompts in one static batch: no chunks, no token budget.
  BatchDefaults batch_defaults(const GpuSpec&, const std::string&, int64_t max_model_len) const override
  {
    return {false, std::max<int64_t>(max_model_len, 2048), 256, "generate()'s one static batch"};
  }
  std::string summary_prefix() const override { return "Hugging Face generate() in eager PyTorch, "; }

  void check(ParamReader& r, const InferenceConfig& c, const ModelSpec& m) const override
  {
    auto refuse = [&](const char* key, const std::string& why) { r.fail(key, "engine hf: " + why); };
    if (hf::architecture(m) == hf::Arch::none)
      refuse("engine", std::string("runs transformers' modules of ") + hf::modelled_architectures() + "; " + m.name +
                           " is none of them");
    if (c.tp > 1 || c.ep > 1)
      refuse(c.tp > 1 ? "tp" : "ep", "generate() on one GPU (device_map's layers spread over GPUs are not modelled)");
    if (c.scheduler->iteration_level())
      refuse("scheduler", "generate() runs one batch to its longest output: scheduler " + default_scheduler(c.source) +
                              " (request-level batching)");
    if (c.scheduler->limits().chunked_prefill)
      refuse("chunked_prefill", "generate() prefills whole prompts");
    if (c.kv_off.any() || c.act_off.any() || c.gpu_batches > 1 || c.cpu_attention)
      refuse("offload", "generate() keeps the KV cache and activations on the GPU: only weights are offloaded "
                        "(offload.weights: cpu), as Accelerate's and ZeRO-3's hooks do");
    if (deepspeed_ && c.weights_off.any() && c.weights_off.total() < 1)
      refuse("offload", "offload_hooks deepspeed: ZeRO-3 offloads every parameter (weights_fraction 1)");
    if (c.weights_off.nvme > 0)
      refuse("offload", "weights on NVMe are not modelled for generate() (offload.weights: cpu)");
    if (c.offload_pinned_given)
      refuse("offload", "offload.pinned is set by offload_hooks (accelerate: the pageable CPU state dict; deepspeed: "
                        "ZeRO-3's pinned buffers)");
    if (r.has("gpu_memory_utilization"))
      refuse("gpu_memory_utilization", "there is no KV budget: the DynamicCache grows until the GPU's memory runs out");
    if (c.weight_dtype != Dtype::fp16 && c.weight_dtype != Dtype::bf16)
      refuse("weight_dtype", "the model in its torch_dtype, fp16 or bf16 (quantized HF models are not modelled)");
    if (c.kv_dtype != c.act_dtype)
      refuse("kv_dtype", "the DynamicCache holds K and V in the model's dtype");
    if (!c.flash_attention)
      refuse("flash_attention", "attention through torch's SDPA (attn_implementation sdpa)");
    if (std::string key = c.kv_manager->key_against_token_growth(); !key.empty())
      refuse(key.c_str(), "the DynamicCache holds each sequence's tokens as they come, one by one (kv_manager paged, "
                          "block_size 1, no shared prefix)");
  }

  void plan(const ModelSpec& m, const InferenceConfig& c, const std::vector<SeqWork>& batch,
            IterationKernels& it) const override
  {
    // generate() pads every row to the same length: a prefill of s tokens on an empty
    // cache, or a decode of one token on a cache of L.
    double b = static_cast<double>(batch.size()), s = 0, L = 0;
    for (const SeqWork& w : batch) {
      s = std::max(s, static_cast<double>(w.tokens));
      L = std::max(L, static_cast<double>(w.context));
    }
    hf::Precision p;
    p.compute_dtype = c.act_dtype;
    p.param = p.compute = dtype_bytes(c.act_dtype);
    p.builds_cache      = layer_reads_cache(m);
    const hf::Tokens t{b, s};
    const double e = p.param, T = t.T(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
    const double f = static_cast<double>(m.ffn_hidden);

    it.eager_embed.clear();
    append_forward(hf::model_embedding(m, t, p).kernels, it.eager_embed);

    // Each kind of layer planned once, at its first: dense or MoE, and a sliding-window
    // one or not (the DynamicCache's DynamicSlidingWindowLayer keeps the last window - 1
    // tokens: its attention reads those and the new ones).
    it.eager_layers.clear();
    it.eager_kind.assign(static_cast<size_t>(m.layers), 0);
    std::map<std::pair<bool, bool>, uint8_t> kinds;
    for (int64_t l = 0; l < m.layers; ++l) {
      const std::pair<bool, bool> kind{m.moe_layer(l), m.windowed_layer(l)};
      const auto [at, first]                = kinds.emplace(kind, static_cast<uint8_t>(it.eager_layers.size()));
      it.eager_kind[static_cast<size_t>(l)] = at->second;
      if (first)
        it.eager_layers.push_back(
            eager_layer(m, p, {b, s, kind.second ? std::min(L, static_cast<double>(m.sliding_window - 1)) : L}, l));
    }

    std::vector<KernelPlan> head;
    EagerOps ops(head);
    if (m.final_norm)
      hf::final_norm_of(m)(ops, "final_norm", T, h, p);
    hf::linear(ops, "lm_head", b, h, V, false, p); // logits_to_keep = 1
    if (m.final_logit_softcap > 0)                 // Gemma 2: logits / cap, tanh, * cap over the kept logits
      ops.op({{"softcap.div", 2 * b * V * e}, {"softcap.tanh", 2 * b * V * e}, {"softcap.mul", 2 * b * V * e}}, {});
    // _sample's step, greedy: next_token_logits = logits[:, -1, :].to(float32); argmax;
    // next * unfinished + pad * (1 - unfinished); input_ids and attention_mask grown by
    // torch.cat; MaxLengthCriteria's full tensor, EosTokenCriteria's isin; unfinished &=
    // ~done and its max (read by the host); cache_position[-1:] + 1.
    const double ids = b * (L + s + 1) * 8;
    ops.op({{"generate.logits_fp32", b * V * (e + 4)},
            {"generate.argmax", b * V * 4 + b * 8},
            {"generate.mul_unfinished", 3 * b * 8},
            {"generate.rsub_unfinished", 2 * b * 8},
            {"generate.mul_pad", 2 * b * 8},
            {"generate.add_pad", 3 * b * 8},
            {"generate.cat_input_ids", 2 * ids},
            {"generate.cat_attention_mask", 2 * ids},
            {"generate.max_length", b},
            {"generate.isin_eos", b * 9},
            {"generate.and_not", 3 * b},
            {"generate.max_unfinished", b * 8},
            {"generate.cache_position", 16}},
           {});
    it.eager_head.clear();
    append_forward(head, it.eager_head);

    // Eager PyTorch frees a tensor when its last reference goes: at the widest point of a
    // layer the stream and its norm's fp32 copies, and the MLP's three intermediates
    // (the activation, up and their product) are alive; then the logits and their fp32 copy.
    // An MoE layer's widest point is its experts' path over the T k token-expert rows:
    // the gathered tokens, gate_up's output, the activation, the product, down's output
    // and its weighted copy (plus a shared expert's MLP beside them).
    double mlp = 3 * f * e;
    if (m.moe.enabled()) {
      const double k = static_cast<double>(m.moe.top_k), F = static_cast<double>(m.moe.expert_ffn);
      mlp = k * (4 * F + 3 * h) * e + 3 * static_cast<double>(m.moe.shared_ffn * m.moe.shared_experts) * e;
    }
    // gpt-oss's scores and probabilities over every key and the sink (two at once) beside
    // k and v repeated for every query head; latent attention's keys and values rebuilt for
    // every cached token (kv_b's output and the key).
    double attention = 0;
    if (m.attention_sinks)
      attention =
          2 * b * static_cast<double>(m.heads) * (s * (L + s + 1) + (L + s) * static_cast<double>(m.head_dim())) * e;
    if (m.mla.enabled())
      attention = b * (L + s) * static_cast<double>(m.heads) *
                  static_cast<double>(2 * m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim + m.mla.v_head_dim) * e;
    it.activation_bytes =
        std::max(it.activation_bytes, T * (2 * h * e + 2 * h * 4 + mlp) + attention + b * V * (e + 4));
  }

  // No budget: the DynamicCache grows until the GPU's memory runs out (the replay's
  // allocations find where).
  StartupBudget kv_budget(const StartupInputs& in) const override
  {
    StartupBudget b;
    b.kv_bytes = in.total;
    return b;
  }
  std::string refuses_start(const StartupBudget&, int64_t, int64_t, int64_t, double) const override { return ""; }

private:
  bool deepspeed_ = false;
};

const bool registered = inference_engine_registry().add(
    "hf",
    "Hugging Face transformers' generate() in eager PyTorch: every module's kernels one by one (sdpa attention; "
    "gpt-oss eager), a "
    "DynamicCache grown by torch.cat each step, one static batch, no KV budget (the cache grows until memory runs "
    "out); host work not modelled. The modules of every family the pytorch stack runs. Offloaded layers "
    "(offload.weights: cpu) come "
    "in as Accelerate's hooks (from pageable memory) or ZeRO-3's (ZeRO-Inference: pinned, the embedding too) move "
    "them, each layer's just before it runs, every forward (offload_hooks). Where a spec does not say: scheduler "
    "static, KV grown token by token (block_size 1), whole prompts in one batch (no chunked prefill, "
    "max(max_model_len, 2048) tokens)",
    [](ParamReader& r) {
      std::string hooks = r.choice("offload_hooks", "accelerate", {"accelerate", "deepspeed"},
                                   "engine hf, offload.weights: cpu: whose hooks move the offloaded layers in, every "
                                   "forward, each as its turn comes: accelerate (device_map's AlignDevicesHook, from "
                                   "pageable memory) or deepspeed (ZeRO-3 parameter offload, ZeRO-Inference: pinned "
                                   "buffers, the embedding table too)");
      return std::make_unique<HfEngine>(hooks != "accelerate"); // deepspeed: ZeRO-3's
    });

} // namespace
} // namespace memwall

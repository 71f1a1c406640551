// Serving mixture-of-experts and multi-head latent attention models: the weights a
// decode reads, the KV cache MLA keeps, against hand calculations.
#include "tests/TestHelpers.hpp"
#include "workloads/inference/InferenceKernels.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/model/ModelPresets.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace memwall;
using namespace memwall::test;

TEST_CASE("a_decode_of_one_token_reads_only_its_k_experts_weights", "[moe][inference]")
{
  // Qwen3-30B-A3B in fp16: h 2048, 128 experts of inner size 768 (3 matrices), top-8.
  ModelSpec m = model_preset("qwen3-30b-a3b");
  InferenceConfig c;
  InferenceKernels k(m, c);
  const double h = 2048, f = 768, E = 128, K = 8, e = 2;
  CHECK(k.experts_touched(1) == Approx(K));
  // 1 - (1 - 8/128)^T of the experts: 64 tokens touch 98.4 % of them.
  CHECK(k.experts_touched(64) == Approx(E * (1 - std::pow(1 - K / E, 64))));
  IterationKernels one = k.plan({{1, 100, true}});
  // Weights read: 8 experts' 3 h f, the router h E; activations of 8 pairs and the token.
  double weights = (K * 3 * h * f + h * E) * e;
  double acts    = (K * (2 * h + 3 * f) + 4 * h) * e + E * 4;
  CHECK(one.layer.mlp.bytes == Approx(weights + acts));
  // FLOPs: the router and k experts, 2 per multiply-add.
  CHECK(one.layer.mlp.flops == Approx(2 * h * E + 2 * K * 3 * h * f));
  // The mean layer holds every expert.
  CHECK(
      k.layer_weight_bytes() / e ==
      Approx(m.attention_params() - 2 * 128 /* q/k norms: not read by GEMMs */ + E * 3 * h * f + h * E).epsilon(1e-9));
}

TEST_CASE("mla_caches_576_elements_per_token_and_layer_on_every_tp_rank", "[mla][inference]")
{
  // DeepSeek-V3: kv_lora_rank 512 + qk_rope_head_dim 64 in bf16 over 61 layers =
  // 70,272 bytes per token, against 2 x 128 heads x 128 x 2 x 61 = 3,997,696 for MHA.
  ModelSpec m = model_preset("deepseek-v3");
  for (int64_t tp : {1, 8}) {
    InferenceConfig c;
    c.tp       = tp;
    c.kv_dtype = c.act_dtype = c.weight_dtype = Dtype::bf16;
    CHECK(InferenceKernels(m, c).kv_bytes_per_token() == 61.0 * 576 * 2);
  }
}

TEST_CASE("mla_serving_gemms_read_the_attention_weights_once_with_the_output_projection_heads_x_v_head_dim_wide",
          "[mla][inference]")
{
  // DeepSeek-V3 (h 7168, 128 heads, v_head_dim 128). The output projection maps the
  // heads' values back: 128 x 128 x 7168 = 117,440,512 weights at tp 1, a tp-th at tp 8;
  // the other GEMMs (the query and KV down- and up-projections, W^UK and W^UV absorbed)
  // read the rest of the layer's attention weights. Before, the output projection was
  // taken as heads x (kv_lora_rank + rope) wide: 528M weights, more than the whole layer
  // holds, and the other GEMMs came out negative.
  ModelSpec m = model_preset("deepseek-v3");
  for (int64_t tp : {1, 8}) {
    InferenceConfig c;
    c.tp = tp;
    InferenceKernels k(m, c);
    IterationKernels it = k.plan({{4, 100, true}});
    const double T = 4, out = 128.0 * 128 * 7168 / static_cast<double>(tp);
    CHECK(it.layer.proj.flops == Approx(2 * T * out));
    double weights = m.mla_down_params() + m.mla_up_params() / static_cast<double>(tp);
    CHECK(it.layer.qkv.flops > 0);
    CHECK(it.layer.qkv.flops + it.layer.proj.flops == Approx(2 * T * weights));
  }
}

TEST_CASE("expert_parallel_serving_moves_whole_experts_not_their_slices", "[moe][inference]")
{
  // Mixtral-8x7B on tp 4: split by tensor, each GPU holds a quarter of all 8 experts and
  // computes a quarter of every pair; spread (ep 4), each holds 2 whole experts and
  // computes the pairs routed to them, an even quarter. Same weights, FLOPs and bytes
  // per GPU; the expert GEMMs are 4 times wider and get a quarter of the pairs each.
  ModelSpec m = model_preset("mixtral-8x7b");
  InferenceConfig split, spread;
  split.tp = spread.tp = 4;
  spread.ep            = 4;
  InferenceKernels a(m, split), b(m, spread);
  CHECK(a.layer_weight_bytes() == Approx(b.layer_weight_bytes()));
  IterationKernels ia = a.plan({{512, 0, true}}), ib = b.plan({{512, 0, true}});
  CHECK(ia.layer.mlp.flops == Approx(ib.layer.mlp.flops));
  CHECK(ia.layer.mlp.shape.n * 4 == ib.layer.mlp.shape.n);
  CHECK(ib.layer.mlp.shape.groups() == 2); // 512 tokens touch all 8 experts: 2 per GPU
  CHECK_THAT(
      refused("ep-not-tp",
              "hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {preset: mixtral-8x7b}\n"
              "inference: {tp: 4, ep: 2, poisson: {rate: 50, requests: 10, seed: 5, prompt_len: 64, output_len: 8}}\n"),
      Catch::Contains("inference.ep") && Catch::Contains("must be 1 or a multiple of tp = 4"));
}

TEST_CASE("a_sliding_window_layer_attends_to_its_window_only", "[inference][window]")
{
  // gpt-oss-120b: every other layer attends to the last 128 tokens. A decode at context
  // 10,000 (query position 10,001): the full layers see 10,001 keys, the windowed 128;
  // the mean layer 5,064.5. Its KV read: 10,001 and 128 tokens, the same way.
  ModelSpec m = model_preset("gpt-oss-120b");
  InferenceConfig c;
  InferenceKernels k(m, c);
  IterationKernels it = k.plan({{1, 10000, true}});
  const double heads = 64, head_dim = 64, kv_per_token = 2 * 8 * 64 * 2; // K and V of 8 heads, fp16
  CHECK(it.layer.attn.flops == Approx(4 * heads * head_dim * (0.5 * 10001 + 0.5 * 128)));
  CHECK(it.layer.kv_read_bytes == Approx((0.5 * 10001 + 0.5 * 128) * kv_per_token));
  // A prefill of 100 tokens from scratch: positions 1..100 see min(p, 128) = p keys.
  IterationKernels pre = k.plan({{100, 0, true}});
  CHECK(pre.layer.attn.flops == Approx(4 * heads * head_dim * 5050));
}

TEST_CASE("attention_data_parallel_sends_each_moe_layers_tokens_to_their_experts_and_back", "[moe][inference][a2a]")
{
  // Mixtral-8x7B (h 4096, 32 MoE layers, top-2) on 4 GPUs of a DGX H100, tp 1, ep 4: 4
  // attention data-parallel groups. A fixed batch of 8 prompts of 16 tokens and 2
  // output tokens runs 2 iterations: the prefill of 128 tokens (it samples the first
  // token) and a decode of 8. Each MoE layer dispatches and combines by all-to-all; a
  // GPU receives an even quarter of the T x 2 token-expert pairs, a buffer of
  // T x 2 / 4 x 4096 x 2 bytes, of which it sends 3/4 to the other 3 GPUs each way:
  //   32 layers x 2 all-to-alls x (128 + 8) x 2 / 4 x 4096 x 2 x 3/4 = 26,738,688 bytes
  // through its NVLink port, up and down alike. Nothing else crosses NVLink (tp 1).
  nlohmann::json j =
      run_json("ep4-dp-attention", "hardware: {node: dgx-h100, gpus_per_node: 4}\n"
                                   "model: {preset: mixtral-8x7b}\n"
                                   "inference: {tp: 1, ep: 4, batch: 8, prompt_len: 16, output_len: 2}\n");
  const double expected = 32.0 * 2 * (128 + 8) * 2 / 4 * 4096 * 2 * 3 / 4;
  CHECK(expected == 26738688.0);
  int seen = 0;
  for (const auto& l : j["links"]) {
    std::string name = l["name"];
    if (name.find("nvlink") != std::string::npos) {
      CHECK(l["bytes"].get<double>() == Approx(expected).epsilon(1e-12));
      ++seen;
    }
  }
  CHECK(seen >= 2);
  CHECK(j["iterations"] == 2);
  CHECK(j["requests_completed"] == 8);
}

TEST_CASE("an_attention_data_parallel_group_runs_its_share_of_the_batch_and_its_experts_all_pairs_share",
          "[moe][inference][a2a]")
{
  // Qwen3-30B-A3B (h 2048, 128 experts of 768, top-8), 16 decodes at context 1,000.
  // ep 4 over 4 groups of tp 1: the representative attends for 4 sequences (a quarter of
  // ep 1's attention), holds 32 whole experts (a quarter of the expert weights) and
  // computes a quarter of the 16 x 8 = 128 pairs: 32 pairs, 4 x 2048 x 2 bytes each in
  // the dispatch buffer.
  ModelSpec m = model_preset("qwen3-30b-a3b");
  InferenceConfig one, four;
  four.ep = 4;
  CHECK(four.attention_dp() == 4);
  CHECK(four.replica_gpus() == 4);
  InferenceKernels a(m, one), b(m, four);
  std::vector<SeqWork> batch(16, SeqWork{1, 1000, true});
  IterationKernels ia = a.plan(batch), ib = b.plan(batch);
  CHECK(ib.tokens == 4);
  CHECK(ib.layer.attn.flops == Approx(ia.layer.attn.flops / 4));
  CHECK(ib.layer.kv_read_bytes == Approx(ia.layer.kv_read_bytes / 4));
  CHECK(ib.layer.qkv.flops == Approx(ia.layer.qkv.flops / 4));
  const double h = 2048, f = 768, E = 128, e = 2;
  CHECK(ib.layer.dispatch_bytes == Approx(16.0 * 8 / 4 * h * e));
  CHECK(ib.layer.combine_bytes == ib.layer.dispatch_bytes);
  // FP8 weights run FP8 GEMMs: the tokens go out in FP8 (1 byte and a 4-byte scale per
  // 128 elements) and come back in 16 bits.
  InferenceConfig f8  = four;
  f8.weight_dtype     = Dtype::fp8;
  IterationKernels i8 = InferenceKernels(m, f8).plan(batch);
  CHECK(i8.layer.dispatch_bytes == Approx(32 * h * 1.03125));
  CHECK(i8.layer.combine_bytes == Approx(32 * h * e));
  // Router on 4 tokens, 32 pairs through whole experts (3 matrices of h x f).
  CHECK(ib.layer.mlp.flops == Approx(2 * 4 * h * E + 2 * 32 * 3 * h * f));
  double expert_weights_one = E * 3 * h * f * e;
  CHECK(a.layer_weight_bytes() - b.layer_weight_bytes() == Approx(expert_weights_one * 3 / 4));
}

namespace {

// A paged KV manager configured by the inference keys `keys`, started for one run.
std::unique_ptr<KvManager> paged_kv(const KvManagerParams& p, const std::string& keys)
{
  ParamReader inference(YAML::Load(keys), "test", "inference");
  return kv_manager_registry().make("paged", inference, EngineDefaults{})->start(p);
}

} // namespace

TEST_CASE("pooled_attention_data_parallel_kv_keeps_a_sequence_in_one_group_and_a_prefix_in_each",
          "[inference][kv][a2a]")
{
  // 4 groups of 1,000 slots each (blocks of 16: 992 usable each, 3,968 pooled). A
  // sequence may take one group's 992 at most; a shared prefix of 64 tokens is held by
  // every group: 256 slots once the first sequence joins it.
  KvManagerParams p;
  p.capacity_tokens = 992;
  p.max_model_len   = 4096;
  p.groups          = 4;
  auto kv           = paged_kv(p, "{block_size: 16, shared_prefix: 64}");
  CHECK(kv->capacity() == 3968);
  CHECK(kv->sequence_capacity() == 992);
  Sequence s;
  s.req.prompt_tokens = 100;
  REQUIRE(kv->reserve(s, 100));
  CHECK(kv->reserved() == 48 /* 36 own tokens in 3 blocks */ + 4 * 64);
  kv->release(s);
  CHECK(kv->reserved() == 0);
  CHECK_THAT(refused("ep-gpus", "hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {preset: mixtral-8x7b}\n"
                                "inference: {tp: 2, ep: 8, batch: 2, prompt_len: 16, output_len: 2}\n"),
             Catch::Contains("inference.ep") && Catch::Contains("ep = 8 GPUs but the hardware has 4"));
}

TEST_CASE("sliding_window_layers_keep_only_their_windows_kv", "[inference][window][kv]")
{
  // Half of a layer stack windowed at 128 tokens, paged in blocks of 16 (vLLM's hybrid
  // KV cache manager frees the blocks behind a window). 10,000 tokens hold 625 blocks in
  // the full layers and 128 / 16 + 1 = 9 in the windowed ones: 10,000 - 0.5 x (10,000 -
  // 144) = 5,072 slots of a whole token's KV. Within the window nothing is saved.
  KvManagerParams p;
  p.capacity_tokens = 1 << 20;
  p.max_model_len   = 1 << 20;
  p.windowed_share  = 0.5;
  p.window          = 128;
  auto paged        = paged_kv(p, "{block_size: 16}");
  CHECK(paged->slots_for(10000) == 5072);
  CHECK(paged->slots_for(100) == 112);
  CHECK(paged->held(10000) == 10000 - (10000 - 128) / 2); // token states stored
  // gpt-oss-120b (18 of 36 layers windowed at 128; 36 x 2 x 8 KV heads x 64 x 2 bytes =
  // 73,728 bytes per token in fp16) served one 10,000-token prompt: after the prefill it
  // holds room for 10,001 tokens, 10,016 in the full layers' blocks and 144 in the
  // windowed: 10,016 - 0.5 x 9,872 = 5,080 slots, half what full attention would hold.
  nlohmann::json j =
      run_json("gpt-oss-window", "hardware: {node: dgx-h100, gpus_per_node: 1}\n"
                                 "model: {preset: gpt-oss-120b}\n"
                                 "inference: {weight_dtype: fp4, batch: 1, prompt_len: 10000, output_len: 1}\n");
  CHECK(j["kv_cache"]["bytes_per_token"] == 73728.0);
  CHECK(j["kv_cache"]["peak_reserved_bytes"].get<double>() == 5080.0 * 73728);
  CHECK(j["devices"][0]["peak_by_category"]["kv_cache"].get<double>() == 5080.0 * 73728);
}

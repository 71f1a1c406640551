// PEFT in the `pytorch` stack: LoRA on a bf16 model and QLoRA on bitsandbytes' NF4 base,
// each projection's kernels counted by hand from PEFT's lora.Linear and bnb's Linear4bit
// (calibration/research/peft-qlora-liger.md sections 1-2), the frozen base's bytes from
// the model's shapes, the fits against the longest sequences Hugging Face + FA2 trained
// before running out of memory (Unsloth's README at e3162dc5). The RTX 4090 answers the README
// gives are tests/pytorch_rtx4090_finetune_test.cpp's.
#include "tests/TestHelpers.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

struct ProjectionCount {
  int fwd = 0, bwd = 0;
  double kept = 0, weights_kept = 0;
};

// Layer 1 of Llama-3-8B under PEFT (rank 16 on `targets`, an NF4 base or not), one
// sequence of 1,024 tokens.
std::vector<KernelPlan> peft_layer(bool nf4, const std::vector<std::string>& targets, Dtype adapters = Dtype::fp32,
                                   double dropout = 0)
{
  ParamReader training(YAML::Load("{}"), "test", "training");
  TrainingConfig cfg;
  cfg.stack = training_stack_registry().make("pytorch", training), cfg.seq_len = 1024, cfg.micro_batch = 1,
  cfg.global_batch = 1, cfg.precision = Dtype::bf16;
  cfg.lora.enabled = true, cfg.lora.rank = 16, cfg.lora.nf4_base = nf4, cfg.lora.targets = targets;
  cfg.lora.adapter_dtype = adapters, cfg.lora.dropout = dropout;
  return cfg.stack->layer(model_preset("llama-3-8b"), step_shape(cfg), 1).kernels;
}

// The kernels of q_proj (its base and its adapter) in that layer.
ProjectionCount q_proj(bool nf4, const std::vector<std::string>& targets, Dtype adapters = Dtype::fp32,
                       double dropout = 0, const std::string& projection = "attn.q")
{
  ProjectionCount n;
  for (const KernelPlan& k : peft_layer(nf4, targets, adapters, dropout)) {
    if ((k.name != projection && k.name.rfind(projection + ".", 0) != 0) || k.name == projection + ".bwd.grad_clone")
      continue;
    n.fwd += k.runs(true) ? 1 : 0;
    n.bwd += k.runs(false) && !k.accumulates
                 ? (k.kclass == KernelClass::gemm && k.bwd_pass == GemmPass::backward ? 2 : 1)
                 : 0;
    (k.saved_category == MemCategory::weights ? n.weights_kept : n.kept) += k.saved_bytes;
  }
  return n;
}

constexpr double T = 1024, h = 4096, r = 16;

std::string qlora(const std::string& node, const std::string& model, int seq)
{
  return "hardware: {node: " + node + ", gpus_per_node: 1}\nmodel: {preset: " + model +
         "}\ntraining: {stack: pytorch, seq_len: " + std::to_string(seq) +
         ", micro_batch: 1, global_batch: 1, optimizer: adam8bit, recompute: full,\n"
         "  lora: {rank: 32, base: nf4, targets: [qkv, proj, mlp.up, mlp.down]}}\n";
}

} // namespace

TEST_CASE("a_lora_projection_launches_nine_kernels_forward_and_eleven_backward_keeping_its_own_copy_of_x",
          "[stack][pytorch][lora]")
{
  // PEFT's lora.Linear on a bf16 base: the base GEMM; x cast to the adapters' fp32 and
  // back by autocast for lora_A; A's and B's weight casts, their GEMMs; the scale and the
  // add: 3 GEMMs + 6 = 9. Backward: the scale, B's two GEMMs and its gradient's cast, A's
  // two GEMMs, its gradient's cast and x's two casts back, the base's input gradient and
  // the sum of x's gradients: 5 GEMMs + 6 = 11.
  ProjectionCount n = q_proj(false, {"qkv"});
  CHECK(n.fwd == 9);
  CHECK(n.bwd == 11);
  // Kept: lora_A's bf16 copy of x (2 T h) and its output (2 T r); the base keeps nothing
  // (its weight is frozen). The adapters' bf16 weight casts: 2 r (h + h).
  CHECK(n.kept == Approx(2 * T * h + 2 * T * r).epsilon(1e-12));
  CHECK(n.weights_kept == Approx(2 * r * (h + h)).epsilon(1e-12));
  // Without an adapter the frozen bf16 projection is its GEMM alone, input gradient only.
  ProjectionCount base = q_proj(false, {"proj"});
  CHECK(base.fwd == 1);
  CHECK(base.bwd == 1);
  CHECK(base.kept == 0);
}

TEST_CASE("a_qlora_projection_dequantises_its_nf4_weight_before_each_use_and_casts_the_fp32_stream",
          "[stack][pytorch][lora]")
{
  // bitsandbytes' Linear4bit after prepare_model_for_kbit_training (an fp32 stream):
  // x.to(bf16), the absmax's dequantisation and offset, the NF4 dequantisation, the GEMM,
  // the output cast back to fp32: 6 forward; backward the same 6 in reverse.
  ProjectionCount base = q_proj(true, {"proj"});
  CHECK(base.fwd == 6);
  CHECK(base.bwd == 6);
  CHECK(base.kept == 0);
  // With its adapter: PEFT's bnb wrapper clones the result (no fp32 round trip under
  // autocast), lora_A keeps autocast's bf16 cast of the fp32 x: 6 + 1 + 7 forward.
  ProjectionCount adapted = q_proj(true, {"qkv"});
  CHECK(adapted.fwd == 6 + 1 + 7);
  CHECK(adapted.kept == Approx(2 * T * h + 2 * T * r).epsilon(1e-12));
}

TEST_CASE("qlora_stores_the_projections_in_nf4_and_the_rest_in_fp32", "[stack][pytorch][lora]")
{
  // Llama-3-8B: 32 layers of projections h (q) + 2 x 1,024 (k, v) + h (o) wide and three
  // 14,336 MLP matrices: 6,979,321,856 weights at 4.127 bits (0.51587 B); the embedding,
  // lm_head and norms (2 x 128,256 h + 65 h) in fp32 after prepare_model_for_kbit_training;
  // adapters of rank 32 on all seven: 32 x (3h + 2 x 1,024 + ... ) in fp32 with their
  // gradients and AdamW8bit's 2.03 B.
  nlohmann::json j  = memwall::test::run_json("qlora_8b_weights", qlora("dgx-a100", "llama-3-8b", 512));
  const double proj = 32.0 * (4096.0 * (4096 + 1024 + 1024 + 4096) + 3 * 4096.0 * 14336);
  const double rest = 2 * 128256.0 * 4096 + 65 * 4096.0;
  const double adapters =
      32.0 * 32 * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 2 * (4096 + 14336) + (14336 + 4096));
  const double nf4 = (4 + 8.0 / 64 + 32.0 / (64 * 256)) / 8;
  const auto& by   = j["devices"][0]["peak_by_category"];
  // The frozen base and the adapters' fp32 copies; at the peak also autocast's bf16 casts of
  // one layer's adapters and lm_head's uncached bf16 copy (2 x 128,256 h), at most.
  const double stored = proj * nf4 + rest * 4 + adapters * 4;
  CHECK(by["weights"].get<double>() >= stored * 0.999);
  CHECK(by["weights"].get<double>() <= stored + 2 * 128256.0 * 4096 + adapters * 2 / 32 + 1e6);
  CHECK(by["optimizer"].get<double>() == Approx(adapters * 2 * (1 + 4.0 / 256)).epsilon(1e-6));
}

TEST_CASE("qlora_fits_the_longest_sequences_hugging_face_trained_before_running_out_of_memory",
          "[stack][pytorch][lora]")
{
  // Unsloth's README (commit e3162dc5): QLoRA of rank 32 on all linear layers, one
  // sequence, Hugging Face + FA2 trained Llama 3.3 70B up to 6,916 tokens on an 80 GB A100
  // and Llama 3.1 8B up to 5,789 tokens on 24 GB. memwall fits both, within 15 % of the
  // card (its own limits are 8,064 and 6,581 tokens, with transformers 5's loss or 4.47's),
  // and a sequence a third longer runs out of memory.
  struct Case {
    const char *node, *model;
    int tokens;
  };
  for (const Case& c : {Case{"dgx-a100", "llama-3-70b", 6916}, Case{"workstation-4x4090", "llama-3-8b", 5789}}) {
    INFO(c.model);
    const std::string model = std::string(c.model) + ", max_seq_len: 16384";
    nlohmann::json fits = memwall::test::run_json(std::string("qlora_fit_") + c.model, qlora(c.node, model, c.tokens));
    CHECK(fits["fits"] == true);
    const auto& gpu       = fits["devices"][0];
    const double capacity = gpu["capacity_bytes"].get<double>();
    CHECK(gpu["allocator"]["peak_reserved_bytes"].get<double>() > 0.85 * capacity);
    nlohmann::json longer =
        memwall::test::run_json(std::string("qlora_oom_") + c.model, qlora(c.node, model, c.tokens * 4 / 3));
    CHECK(longer["fits"] == false);
  }
}

TEST_CASE("peft_on_a_family_without_adapter_targets_is_refused_naming_the_key", "[stack][pytorch][limits]")
{
  std::string err = memwall::test::refused("lora_gpt2", "hardware: {node: dgx-a100, gpus_per_node: 1}\n"
                                                        "model: {preset: gpt2}\ntraining: {stack: pytorch, seq_len: "
                                                        "512, global_batch: 1, lora: {rank: 8}}\n");
  CHECK(err.find("training.lora") != std::string::npos);
  CHECK(err.find("Llama-family") != std::string::npos);
}

TEST_CASE("lora_adapts_phi3s_fused_and_gemmas_named_projections", "[stack][pytorch][lora]")
{
  // Phi-3 (qkv_proj, o_proj, gate_up_proj, down_proj) and Gemma 2 (q/k/v/o_proj,
  // gate/up/down_proj) by transformers' names: rank 8 on every projection trains
  // r (in + out) a projection and layer, fp32 gradients of 4 B.
  struct Family {
    const char* name;
    double per_layer; // r (in + out) summed over the layer's projections
  };
  const double r = 8;
  // Phi-3-mini: h 3,072, qkv 9,216 wide, f 8,192 (gate_up 16,384).
  const double phi3 = r * ((3072 + 9216) + (3072 + 3072) + (3072 + 16384) + (8192 + 3072));
  // Gemma 2 2B: h 2,304, 8 heads of 256 (q 2,048), 4 kv heads (1,024), f 9,216.
  const double gemma = r * ((2304 + 2048) + 2 * (2304 + 1024) + (2048 + 2304) + 2 * (2304 + 9216) + (9216 + 2304));
  for (const Family& f : {Family{"phi3-mini", phi3 * 32}, Family{"gemma2-2b", gemma * 26}}) {
    INFO(f.name);
    nlohmann::json j = memwall::test::run_json(
        std::string("lora_names_") + f.name,
        memwall::test::measured_family_spec(f.name, "lora: {rank: 8, targets: [qkv, proj, mlp.up, mlp.down]}"));
    CHECK(j["devices"][0]["max_by_category"]["gradients"].get<double>() == Approx(4 * f.per_layer).epsilon(1e-6));
  }
}

TEST_CASE("a_qlora_o_proj_reads_the_bf16_attention_output_and_returns_bf16", "[stack][pytorch][lora]")
{
  // Linear4bit returns its input's dtype: o_proj's input is SDPA's bf16 output, so no
  // cast in or out; the adapter (rank 16) keeps nothing of x (the attention keeps it).
  int casts   = 0;
  double kept = 0;
  for (const KernelPlan& k : peft_layer(true, {"proj"}))
    if (k.name.rfind("attn.o.", 0) == 0) {
      casts += k.name.find("cast_output") != std::string::npos || k.name.find("cast_input") != std::string::npos;
      kept += k.saved_category == MemCategory::activations ? k.saved_bytes : 0;
    }
  CHECK(casts == 0);
  CHECK(kept == Approx(2 * T * r).epsilon(1e-12)); // lora_A's output only
}

TEST_CASE("under_qlora_the_mlp_runs_on_linear4bits_fp32_outputs", "[stack][pytorch][lora]")
{
  // Linear4bit returns its input's dtype: gate's and up's outputs are fp32 on the fp32
  // stream, so SiLU keeps its fp32 input (4 T f) and down casts the fp32 product to bf16
  // for its GEMM (and back: its output joins the fp32 stream without a cast).
  const double f   = 14336;
  double silu_kept = -1;
  bool down_casts = false, residual_casts = false;
  for (const KernelPlan& k : peft_layer(true, {"qkv"})) {
    if (k.name == "mlp.bwd.silu")
      silu_kept = k.saved_bytes;
    down_casts     = down_casts || k.name == "mlp.down.cast_input";
    residual_casts = residual_casts || k.name == "mlp.residual.bwd.cast_branch_grad";
  }
  CHECK(silu_kept == Approx(4 * T * f).epsilon(1e-12));
  CHECK(down_casts);
  CHECK_FALSE(residual_casts);
}

TEST_CASE("an_8_bit_adamw_keeps_the_embedding_tables_states_in_32_bits_as_the_trainer_asks", "[stack][pytorch][lora]")
{
  // Trainer.create_optimizer under bitsandbytes' 8-bit AdamW registers every nn.Embedding's
  // weight for 32-bit states: Llama-3-8B's token table (128,256 x 4,096 = E) keeps 8 B a
  // parameter of exp_avg and exp_avg_sq, every other parameter 2 x (1 + 4 / 256) B (8-bit
  // states with an fp32 absmax per 256); AdamW keeps 8 B for all of them.
  auto states = [](const char* optimizer) {
    return memwall::test::run_json(std::string("embed_states_") + optimizer,
                                   std::string("hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {preset: "
                                               "llama-3-8b}\ntraining: {stack: pytorch, seq_len: 256, micro_batch: 1, "
                                               "global_batch: 1, recompute: full, optimizer: ") +
                                       optimizer + "}\n")["devices"][0]["peak_by_category"]["optimizer"]
        .get<double>();
  };
  const double P = states("adamw") / 8, E = 128256.0 * 4096;
  CHECK(states("adam8bit") == Approx(8 * E + 2 * (1 + 4.0 / 256) * (P - E)).epsilon(1e-9));
}

TEST_CASE("under_qlora_phi3s_and_gemmas_activations_are_linear4bits_fp32_outputs", "[stack][pytorch][lora]")
{
  // Linear4bit returns its input's dtype: Phi-3's gate_up_proj (2 f wide) and Gemma's gate
  // and up read the fp32 stream, so their activations keep fp32 tensors: Phi-3's SiLU the
  // whole gate_up output (2 T f x 4 B; T f x 2 B each in bf16 without QLoRA), Gemma 2's
  // GELU its input (T f x 4 B); down_proj casts the fp32 product for its GEMM.
  struct Family {
    const char* name;
    const char* kept_by;
    double elems; // of the kept tensor, T = 512 tokens
  };
  for (const Family& fam :
       {Family{"phi3-mini", "mlp.bwd.silu", 2 * 512.0 * 8192}, Family{"gemma2-2b", "mlp.bwd.act", 512.0 * 9216}}) {
    INFO(fam.name);
    const ModelSpec m =
        read_hf_config(memwall::test::source_path(std::string("tests/data/hf_families/") + fam.name + "/config.json"));
    for (bool nf4 : {false, true}) {
      ParamReader training(YAML::Load("{}"), "test", "training");
      TrainingConfig cfg;
      cfg.stack = training_stack_registry().make("pytorch", training), cfg.seq_len = 512, cfg.micro_batch = 1,
      cfg.global_batch = 1, cfg.precision = Dtype::bf16;
      cfg.lora.enabled = true, cfg.lora.rank = 8, cfg.lora.nf4_base = nf4, cfg.lora.targets = {"qkv"};
      double kept     = -1;
      bool down_casts = false;
      for (const KernelPlan& k : cfg.stack->layer(m, step_shape(cfg), 1).kernels) {
        if (k.name == fam.kept_by)
          kept = k.saved_bytes;
        down_casts = down_casts || k.name == "mlp.down_proj.cast_input";
      }
      CHECK(kept == Approx(fam.elems * (nf4 ? 4 : 2)).epsilon(1e-12));
      CHECK(down_casts == nf4);
    }
  }
}

TEST_CASE("adapters_left_in_the_compute_dtype_cast_nothing_and_keep_the_norms_output_once", "[stack][pytorch][lora]")
{
  // get_peft_model(..., autocast_adapter_dtype=False) on a bf16 model: x.to(lora_A's
  // bf16) is x itself, so forward is the base GEMM, lora_A's and lora_B's GEMMs, the scale
  // and the add (3 GEMMs + 2); backward the scale, B's two GEMMs, A's two, the base's
  // input gradient and the sum of x's gradients (5 GEMMs + 2). No weight cast. lora_A's
  // mm saves x, input_layernorm's output, which nothing else keeps (the norm's weight and
  // the base projections frozen): q's adapter keeps it (2 T h) beside its own output
  // (2 T r), and k's and v's save the same tensor, their outputs alone.
  ProjectionCount n = q_proj(false, {"qkv"}, Dtype::bf16);
  CHECK(n.fwd == 5);
  CHECK(n.bwd == 7);
  CHECK(n.kept == Approx(2 * T * h + 2 * T * r).epsilon(1e-12));
  CHECK(n.weights_kept == 0);
  CHECK(q_proj(false, {"qkv"}, Dtype::bf16, 0, "attn.v").kept == Approx(2 * T * r).epsilon(1e-12));
  // o_proj reads SDPA's output, which the attention keeps already.
  CHECK(q_proj(false, {"proj"}, Dtype::bf16, 0, "attn.o").kept == Approx(2 * T * r).epsilon(1e-12));
  // On QLoRA's fp32 stream autocast still casts x for the bf16 lora_A (kept, 2 T h); the
  // adapters' own weight casts are gone.
  ProjectionCount q = q_proj(true, {"qkv"}, Dtype::bf16);
  CHECK(q.kept == Approx(2 * T * h + 2 * T * r).epsilon(1e-12));
  CHECK(q.weights_kept == 0);
}

TEST_CASE("lora_dropout_keeps_each_adapted_projections_mask_and_the_input_lora_a_reads", "[stack][pytorch][lora]")
{
  // LoraConfig(lora_dropout=0.05) in a model that trains: nn.Dropout on q_proj's x, one
  // kernel each way (ATen's fused dropout and its backward). bf16 adapters: lora_A reads
  // the dropout's bf16 output and keeps it (2 T h) beside the bool mask (T h).
  ProjectionCount bf16 = q_proj(false, {"qkv"}, Dtype::bf16, 0.05);
  CHECK(bf16.fwd == 5 + 1);
  CHECK(bf16.bwd == 7 + 1);
  CHECK(bf16.kept == Approx(2 * T * r + T * h + 2 * T * h).epsilon(1e-12));
  // fp32 adapters: the dropout runs on x's fp32 copy, which autocast casts for lora_A
  // (that bf16 copy kept, as without dropout): the mask is what it adds.
  ProjectionCount fp32 = q_proj(false, {"qkv"}, Dtype::fp32, 0.05);
  CHECK(fp32.fwd == 9 + 1);
  CHECK(fp32.bwd == 11 + 1);
  CHECK(fp32.kept == Approx(2 * T * h + 2 * T * r + T * h).epsilon(1e-12));
}

TEST_CASE("peft_module_names_a_model_lacks_and_adapters_in_another_dtype_are_refused", "[stack][pytorch][limits]")
{
  // Phi-3 fuses q, k and v (qkv_proj): PEFT finds no q_proj there.
  std::string err = memwall::test::refused(
      "lora_phi3_q", memwall::test::measured_family_spec("phi3-mini", "lora: {rank: 8, targets: [q_proj]}"));
  CHECK(err.find("training.lora") != std::string::npos);
  CHECK(err.find("no module 'q_proj'") != std::string::npos);
  CHECK(err.find("qkv_proj") != std::string::npos);
  // autocast_adapter_dtype=False leaves the adapters in the model's dtype: bf16 adapters
  // on an fp32 model are nothing PEFT makes.
  err = memwall::test::refused("lora_bf16_adapters_fp32",
                               "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: llama-3-8b}\n"
                               "training: {stack: pytorch, seq_len: 512, global_batch: 1, precision: fp32,\n"
                               "  lora: {rank: 8, adapter_dtype: bf16}}\n");
  CHECK(err.find("adapter_dtype bf16") != std::string::npos);
  CHECK(err.find("allowed: fp32") != std::string::npos);
}

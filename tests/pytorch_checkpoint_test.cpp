// Gradient checkpointing as transformers runs it (recompute: full under the eager
// stacks): torch.utils.checkpoint around each decoder layer, reentrant by default until
// transformers 4.57 and non-reentrant from 5.0 (gradient_checkpointing_enable in
// modeling_utils.py at v4.57.6 and v5.0.0). Reentrant (CheckpointFunction) reruns the
// layer whole and holds the rerun output while its nested backward runs; non-reentrant
// stops rerunning once every tensor the forward saved is packed again
// (calibration/research/peft-qlora-liger.md section 3.3).
#include "tests/TestHelpers.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

// Layer 1 of Llama-3-8B under the pytorch stack with gradient checkpointing, one sequence
// of 1,024 tokens; `training` is the spec's training section (its pytorch knobs).
BlockPlan checkpointed_layer(const std::string& training, bool qlora, const char* release = nullptr,
                             const ModelSpec& model = model_preset("llama-3-8b"))
{
  ParamReader r(YAML::Load(training), "test", "training");
  TrainingConfig cfg;
  cfg.stack = training_stack_registry().make("pytorch", r), cfg.seq_len = 1024, cfg.micro_batch = 1,
  cfg.global_batch = 1, cfg.precision = Dtype::bf16, cfg.recompute = Recompute::full;
  if (release)
    cfg.transformers_release = ReleaseNumber::parse(release);
  if (qlora)
    cfg.lora.enabled = true, cfg.lora.rank = 16, cfg.lora.nf4_base = true;
  return cfg.stack->layer(model, step_shape(cfg), 1);
}

// The kernels a checkpoint's rerun leaves out.
std::vector<std::string> not_rerun(const BlockPlan& b)
{
  std::vector<std::string> out;
  for (size_t i = b.checkpoint_stop < 0 ? b.kernels.size() : static_cast<size_t>(b.checkpoint_stop);
       i < b.kernels.size(); ++i)
    if (b.kernels[i].runs(true))
      out.push_back(b.kernels[i].name);
  return out;
}

} // namespace

TEST_CASE("a_non_reentrant_checkpoint_stops_before_the_ops_that_save_nothing_after_the_last_that_does",
          "[stack][pytorch][recompute]")
{
  // A full fine-tune's Llama layer: down_proj's GEMM is the last op that saves (its input,
  // the weight's autocast copy); the residual add after it saves nothing and is not rerun.
  CHECK(not_rerun(checkpointed_layer("{}", false)) == std::vector<std::string>{"mlp.residual"});
  // QLoRA on every projection: lora_B of down_proj saves lora_A's output last; the
  // adapter's scale (a Python float) and add and the residual add save nothing.
  CHECK(not_rerun(checkpointed_layer("{}", true)) ==
        std::vector<std::string>{"mlp.down.lora.scale", "mlp.down.lora.add", "mlp.residual"});
  CHECK(checkpointed_layer("{}", false).checkpoint_output == 0);
  // QLoRA on q and v only: down_proj's NF4 GEMM packs nothing (MatMul4Bit keeps its
  // weight in ctx.tensors), so the rerun stops after the MLP's product, which packs its
  // two operands.
  ParamReader r(YAML::Load("{}"), "test", "training");
  TrainingConfig cfg;
  cfg.stack = training_stack_registry().make("pytorch", r), cfg.seq_len = 1024, cfg.global_batch = 1,
  cfg.recompute    = Recompute::full;
  cfg.lora.enabled = true, cfg.lora.rank = 16, cfg.lora.nf4_base = true, cfg.lora.targets = {"q_proj", "v_proj"};
  const std::vector<std::string> qv = not_rerun(cfg.stack->layer(model_preset("llama-3-8b"), step_shape(cfg), 1));
  CHECK(qv.front().rfind("mlp.down", 0) == 0);
  CHECK(qv.back() == "mlp.residual");
  // Gemma 2 ends on post_feedforward_layernorm (whose saved tensors sit on its backward's
  // first entry): it reruns; GPT-2's residual dropout keeps its mask: it reruns too.
  const ModelSpec gemma = read_hf_config(memwall::test::source_path("tests/data/hf_families/gemma2-2b/config.json"));
  CHECK(not_rerun(checkpointed_layer("{}", false, nullptr, gemma)) == std::vector<std::string>{"mlp.residual"});
  CHECK(not_rerun(checkpointed_layer("{}", false, nullptr, model_preset("gpt2"))) ==
        std::vector<std::string>{"mlp.residual"});
}

TEST_CASE("a_reentrant_checkpoint_reruns_the_whole_layer_and_holds_its_output", "[stack][pytorch][recompute]")
{
  // transformers 4.44 (use_reentrant True by default), or the knob: every kernel reruns,
  // and the rerun output, the fp32 stream of 1,024 x 4,096 (4 B: autocast's fp32 model),
  // is held while the layer's backward runs.
  for (const BlockPlan& b :
       {checkpointed_layer("{}", false, "4.44.2"), checkpointed_layer("{pytorch: {use_reentrant: true}}", false)}) {
    CHECK(not_rerun(b).empty());
    CHECK(b.checkpoint_output == Approx(1024.0 * 4096 * 4).epsilon(1e-12));
  }
  // And the knob overrides the release the other way.
  CHECK(checkpointed_layer("{pytorch: {use_reentrant: false}}", false, "4.44.2").checkpoint_output == 0);
}

TEST_CASE("a_reentrant_checkpoint_holds_one_more_stream_tensor_at_a_layers_backward_peak",
          "[stack][pytorch][recompute]")
{
  // QLoRA of Llama-2-70B on an A100 (examples/qlora-llama2-70b-1xa100-80gb.yaml: 2,048
  // tokens, gradient checkpointing): the peak comes in a layer's backward after its rerun,
  // where a reentrant checkpoint also holds the rerun output, the fp32 stream
  // prepare_model_for_kbit_training leaves: 2,048 x 8,192 x 4 B = 67.1 MB.
  const std::string spec =
      memwall::test::read_file(memwall::test::source_path("examples/qlora-llama2-70b-1xa100-80gb.yaml"));
  const double off = memwall::test::peak_without_context(
      memwall::test::run_json("checkpoint_non_reentrant", spec, "--set training.pytorch.use_reentrant=false"));
  const double on = memwall::test::peak_without_context(
      memwall::test::run_json("checkpoint_reentrant", spec, "--set training.pytorch.use_reentrant=true"));
  CHECK(on - off == Approx(2048.0 * 8192 * 4).epsilon(1e-9));
  // A full fine-tune (fp32 parameters under autocast) whose residual add casts the bf16
  // branch: still one stream tensor, 4,096 x 4,096 x 4 B, not the add's bytes beside it.
  // Llama-2-7B with a 1,024-token vocabulary keeps the peak in a layer.
  const std::string full = "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: llama-2-7b, vocab: 1024}\n"
                           "training: {stack: pytorch, seq_len: 4096, micro_batch: 1, global_batch: 1, optimizer: "
                           "adamw, recompute: full}\n";
  const double full_off  = memwall::test::peak_without_context(
       memwall::test::run_json("checkpoint_full_off", full, "--set training.pytorch.use_reentrant=false"));
  const double full_on = memwall::test::peak_without_context(
      memwall::test::run_json("checkpoint_full_on", full, "--set training.pytorch.use_reentrant=true"));
  CHECK(full_on - full_off == Approx(4096.0 * 4096 * 4).epsilon(1e-9));
}

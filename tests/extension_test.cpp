// A new stack with knobs of its own, or an engine with its own KV accounting, is its
// implementation and its test (issue 51): this file defines both, registers them for the
// length of a test and runs them from a spec, touching no other file. A real one lives
// in an impl/ folder (compiled by glob) and adds itself from a static initializer; the
// README's list of implementations then shows it (tests/readme_lists_test.cpp).
#include "sim/Simulation.hpp"
#include "sim/spec/SpecParams.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// Megatron's kernels with model states of the bytes per parameter its three knobs say.
class KnobbedStack : public TrainingStack {
public:
  explicit KnobbedStack(ParamReader& training)
  {
    ParamReader r = training.section("knobbed", "the knobbed stack's settings");
    b_.weights    = r.number("weight_bytes", 2, "bytes per parameter of the weights", 0.5, 16);
    b_.gradients  = r.number("gradient_bytes", 2, "bytes per parameter of the gradients", 0.5, 16);
    b_.optimizer  = r.number("optimizer_bytes", 12, "bytes per parameter of the optimizer's states", 0, 32);
    r.finish();
  }
  BlockPlan embedding(const ModelSpec& m, const StepShape& s) const override { return embedding_block(m, s); }
  BlockPlan layer(const ModelSpec& m, const StepShape& s, int64_t l) const override
  {
    return transformer_layer_block(m, s, l);
  }
  BlockPlan head(const ModelSpec& m, const StepShape& s) const override { return head_block(m, s); }
  ModelStateBytes state_bytes(const TrainingConfig&, const ModelSpec&) const override { return b_; }
  std::vector<OptimizerPass> optimizer_passes(const TrainingConfig& cfg, const ModelStateBytes& b) const override
  {
    return {fused_adamw_pass(cfg, b)};
  }

private:
  ModelStateBytes b_;
};

// vLLM's kernels, with a KV budget that keeps `reserve_bytes` back for itself.
class ReservingEngine : public InferenceEngine {
public:
  explicit ReservingEngine(ParamReader& inference)
      : reserve_(inference.quantity("reserve_bytes", QuantityKind::bytes, 0, "memory the engine keeps back"))
  {}
  std::string default_scheduler(const std::string&) const override { return "continuous"; }
  int64_t default_block_size() const override { return 16; }
  BatchDefaults batch_defaults(const GpuSpec&, const std::string&, int64_t) const override
  {
    return {true, 2048, 256, "the reserving engine's"};
  }
  void check(ParamReader&, const InferenceConfig&, const ModelSpec&) const override {}
  void plan(const ModelSpec&, const InferenceConfig&, const std::vector<SeqWork>&, IterationKernels&) const override {}
  std::string summary_prefix() const override { return "reserving, "; }
  StartupBudget kv_budget(const StartupInputs& in) const override
  {
    StartupBudget b;
    b.weights     = in.weights;
    b.activations = in.iteration_peak;
    b.kv_bytes    = in.total * in.utilization - b.weights - b.activations - reserve_;
    return b;
  }
  std::string refuses_start(const StartupBudget&, int64_t, int64_t, int64_t, double) const override { return ""; }

private:
  double reserve_;
};

// Registered for one test, as a static initializer would for the program.
template <typename Factory>
struct Registered {
  Registry<Factory>& registry;
  std::string name;
  Registered(Registry<Factory>& r, std::string n, const std::string& description, Factory make)
      : registry(r), name(std::move(n))
  {
    registry.add(name, description, std::move(make));
  }
  ~Registered() { registry.remove(name); }
};

const std::string gpt2_on_one_a100 = "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n";

} // namespace

TEST_CASE("a_stack_with_three_knobs_of_its_own_is_its_file_and_its_test", "[extension]")
{
  Registered<TrainingStackFactory> knobbed(training_stack_registry(), "knobbed", "Megatron's kernels, knobbed states",
                                           [](ParamReader& r) { return std::make_unique<KnobbedStack>(r); });
  // GPT-2 (124,439,808 parameters: 12 layers of 7,087,872 and 38,597,376 + 786,432 in
  // the word and position tables) on one GPU without ZeRO: weights 3 B each.
  ExperimentSpec s = parse_spec(gpt2_on_one_a100 + "training: {stack: knobbed, seq_len: 1024, global_batch: 8, "
                                                   "knobbed: {weight_bytes: 3, optimizer_bytes: 4}}\n",
                                "knobbed.yaml", "");
  CHECK(s.training.stack->name() == "knobbed");
  const double params = 124439808;
  CHECK(s.model.total_params() == params);
  RunResult r = simulate(s, true);
  CHECK(r.pools.at(0).max_by_category[static_cast<size_t>(MemCategory::weights)] == Approx(3 * params));
  CHECK(r.pools.at(0).max_by_category[static_cast<size_t>(MemCategory::optimizer)] == Approx(4 * params));
  // Its keys are listed with their owner, and refused under another stack.
  std::vector<ParamDoc> saved = param_docs();
  training_stack_registry().describe("knobbed");
  bool listed = false;
  for (const ParamDoc& d : param_docs())
    listed |= d.path == "training.knobbed.optimizer_bytes" && d.owner == "training stack knobbed";
  param_docs() = saved;
  CHECK(listed);
  CHECK_THROWS_WITH(parse_spec(gpt2_on_one_a100 + "training: {knobbed: {weight_bytes: 3}}\n", "mixed.yaml", ""),
                    Catch::Contains("training.knobbed: read by training stack knobbed; this spec runs training stack "
                                    "megatron"));
}

TEST_CASE("an_engine_with_its_own_kv_accounting_is_its_file_and_its_test", "[extension]")
{
  Registered<InferenceEngineFactory> reserving(inference_engine_registry(), "reserving", "keeps memory back",
                                               [](ParamReader& r) { return std::make_unique<ReservingEngine>(r); });
  auto budget = [](const std::string& extra) {
    ExperimentSpec s = parse_spec(gpt2_on_one_a100 +
                                      "inference: {engine: reserving, batch: 4, prompt_len: 128, "
                                      "output_len: 4" +
                                      extra + "}\n",
                                  "reserving.yaml", "");
    return simulate(s, true).serving.kv_budget_bytes;
  };
  // Everything but the reserve is what the engine grants the same run without one.
  CHECK(budget("") - budget(", reserve_bytes: 1 GiB") == Approx(1024.0 * 1024 * 1024));
  // The key is the reserving engine's: vLLM's refuses it, naming its owner.
  CHECK_THROWS_WITH(parse_spec(gpt2_on_one_a100 + "inference: {reserve_bytes: 1 GiB}\n", "vllm.yaml", ""),
                    Catch::Contains("inference.reserve_bytes: read by inference engine reserving; this spec runs "
                                    "inference engine vllm"));
}

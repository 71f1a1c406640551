// The `pytorch` stack's eager host: the GPU runs no kernel before the host has launched
// it, and the host spends its time per kernel (training.pytorch's two keys). Checked by
// hand from the blocks' kernel counts and against the steps measured on an H200
// (calibration/data/measured/h200/hf-families.csv) that did not set the defaults.
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace memwall;

namespace {

// GPT-2 small, one sequence of 32 tokens on an H200: kernels of a few microseconds, so
// a host at 100 us a kernel sets the pace.
std::string tiny_gpt2(double fwd_s, double bwd_s)
{
  std::ostringstream s;
  s << "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
    << "training: {stack: pytorch, seq_len: 32, micro_batch: 1, global_batch: 1, optimizer: adamw,\n"
    << "  pytorch: {host_seconds_per_forward_kernel: " << fwd_s << ", host_seconds_per_backward_kernel: " << bwd_s
    << "}}\n";
  return s.str();
}

// Kernels one micro-batch launches forward and backward (no gradient to add to yet; a
// GEMM's backward launches two, its input and its weight gradient).
std::pair<int, int> launches(const ModelSpec& m, const StepShape& s)
{
  auto stack = default_training_stack("pytorch");
  std::vector<BlockPlan> blocks{stack->embedding(m, s)};
  for (int64_t l = 0; l < m.layers; ++l)
    blocks.push_back(stack->layer(m, s, l));
  blocks.push_back(stack->head(m, s));
  int fwd = 0, bwd = 0;
  for (const BlockPlan& b : blocks)
    for (const KernelPlan& k : b.kernels) {
      fwd += k.runs(true) ? 1 : 0;
      bwd += k.runs(false) && !k.accumulates
                 ? (k.kclass == KernelClass::gemm && k.bwd_pass == GemmPass::backward ? 2 : 1)
                 : 0;
    }
  return {fwd, bwd};
}

} // namespace

TEST_CASE("a_host_bound_eager_step_grows_by_the_host_time_of_every_launched_kernel", "[stack][pytorch]")
{
  TrainingConfig cfg;
  cfg.stack = default_training_stack("pytorch"), cfg.seq_len = 32, cfg.micro_batch = 1, cfg.global_batch = 1,
  cfg.precision   = Dtype::bf16;
  auto [fwd, bwd] = launches(model_preset("gpt2"), step_shape(cfg));
  REQUIRE(fwd > 300);
  REQUIRE(bwd > 500);
  // Doubling the host's time per kernel adds its time once more for every launch: the
  // GPU waits for each (its kernels here take a few microseconds).
  double slow = memwall::test::run_json("eager_host_slow", tiny_gpt2(200e-6, 100e-6))["step_time_s"].get<double>();
  double fast = memwall::test::run_json("eager_host_fast", tiny_gpt2(100e-6, 50e-6))["step_time_s"].get<double>();
  CHECK(slow - fast == Approx(fwd * 100e-6 + bwd * 50e-6).epsilon(0.01));
  // With no host time the step is the GPU's alone: far shorter.
  double gpu = memwall::test::run_json("eager_host_none", tiny_gpt2(0, 0))["step_time_s"].get<double>();
  CHECK(gpu < 0.2 * fast);
  CHECK(fast >= fwd * 100e-6 + bwd * 50e-6);
}

TEST_CASE("the_pytorch_section_refuses_a_key_it_does_not_have", "[stack][pytorch][limits]")
{
  std::string spec = tiny_gpt2(1e-5, 1e-5);
  spec.replace(spec.find("host_seconds_per_backward_kernel"), 32, "host_seconds_per_kernel");
  std::string err = memwall::test::refused("eager_host_typo", spec);
  CHECK(err.find("host_seconds_per_kernel") != std::string::npos);
}

TEST_CASE("eager_steps_the_host_defaults_were_not_taken_from_land_within_10_percent_of_the_h200_measurements",
          "[stack][pytorch]")
{
  // hf-families.csv: micro-batch 4 x 1,024, fp32 parameters under bf16 autocast, sdpa,
  // fused AdamW, the median of five steps. The host's defaults came from GPT-2 small's
  // trace and step; these six are held out (their configs: tests/data/hf_families).
  const auto measured = memwall::test::measured_family_steps();
  for (const char* family : {"gpt2-medium", "gpt2-xl", "llama-3.2-1b", "mistral-7b-8l", "opt-1.3b", "pythia-1.4b"}) {
    INFO(family);
    REQUIRE(measured.count(family) == 1);
    nlohmann::json j =
        memwall::test::run_json(std::string("eager_host_") + family, memwall::test::measured_family_spec(family));
    CHECK(j["step_time_s"].get<double>() == Approx(measured.at(family).step_s).epsilon(0.10));
  }
}

TEST_CASE("advise_drops_the_pytorch_section_where_it_switches_to_deepspeed", "[stack][pytorch][advise]")
{
  // DeepSpeed runs the same modules but reads no `pytorch` section: a spec that set one
  // still gets DeepSpeed's remedies (its null section is absent), not "read by training
  // stack pytorch".
  const std::string spec =
      memwall::test::read_file(memwall::test::source_path("examples/llama3-8b-hf-finetune-1xh100.yaml"));
  std::string with = spec;
  with.replace(with.find("training:"), 9, "training:\n  pytorch: {use_cache: false}");
  const std::string path = memwall::test::temp_path("advise_pytorch_section.yaml");
  memwall::test::write_file(path, with);
  memwall::test::CliResult r = memwall::test::run_cli("advise '" + path + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("read by training stack pytorch") == std::string::npos);
  CHECK(r.out.find("--set training.pytorch=null") != std::string::npos);
}

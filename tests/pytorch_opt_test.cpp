// The `pytorch` stack's OPT (transformers' modeling_opt.py in eager PyTorch under bf16
// autocast) against the OPT-1.3B step measured on an H200 (torch 2.11, transformers 5.17,
// micro-batch 4 x 1,024: calibration/data/measured/h200/hf-family-kernels.csv).
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace memwall;

TEST_CASE("an_opt_step_cats_and_clones_the_dynamic_caches_k_and_v_as_the_measured_h200_step_did",
          "[stack][pytorch][opt]")
{
  // OPTDecoder builds a DynamicCache (use_cache) in training too: each layer cats k and v
  // onto an empty cache ([4, 32, 1024, 64] each: CatArrayBatchedCopy<OpaqueType<2>,
  // unsigned, 4, 64, 64>) and backward clones dk and dv back (bf16 direct copies): 48 and
  // 48 over OPT-1.3B's 24 layers as measured. Not under gradient checkpointing.
  int measured_cats = 0, measured_clones = 0;
  std::istringstream csv(
      memwall::test::read_file(memwall::test::source_path("calibration/data/measured/h200/hf-family-kernels.csv")));
  for (std::string line; std::getline(csv, line);) {
    if (line.rfind("opt-1.3b,", 0) != 0)
      continue;
    const int count = std::stoi(line.substr(line.rfind(',', line.rfind(',') - 1) + 1));
    if (line.find("CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>") !=
        std::string::npos)
      measured_cats += count;
    if (line.find("direct_copy_kernel_cuda") != std::string::npos && line.find("c10::BFloat16") != std::string::npos)
      measured_clones += count;
  }
  REQUIRE(measured_cats == 48);
  ModelSpec m = model_preset("opt-6.7b");
  m.layers = 24, m.hidden = 2048, m.heads = 32, m.kv_heads = 32, m.ffn_hidden = 8192;
  auto layer_ops = [&](Recompute recompute) {
    TrainingConfig cfg;
    cfg.stack = default_training_stack("pytorch"), cfg.seq_len = 1024, cfg.micro_batch = 4, cfg.global_batch = 4,
    cfg.precision = Dtype::bf16, cfg.recompute = recompute;
    int cats = 0, clones = 0;
    for (const KernelPlan& k : cfg.stack->layer(m, step_shape(cfg), 3).kernels) {
      cats += k.name.find("cache_cat") != std::string::npos ? 1 : 0;
      clones += k.name.find("bwd.clone_d") != std::string::npos ? 1 : 0;
    }
    return std::make_pair(cats, clones);
  };
  auto [cats, clones] = layer_ops(Recompute::none);
  CHECK(24 * cats == measured_cats);
  CHECK(24 * clones == measured_clones);
  CHECK(layer_ops(Recompute::full) == std::make_pair(0, 0));
}

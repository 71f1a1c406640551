// The `pytorch` stack's OPT (transformers' modeling_opt.py in eager PyTorch under bf16
// autocast) against the OPT-1.3B step measured on an H200 (torch 2.11, transformers 5.17,
// micro-batch 4 x 1,024: calibration/data/measured/h200/hf-family-kernels.csv).
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

TEST_CASE("an_opt_step_cats_and_clones_the_dynamic_caches_k_and_v_as_the_measured_h200_step_did",
          "[stack][pytorch][opt]")
{
  // OPTDecoder builds a DynamicCache (use_cache) in training too: each layer cats k and v
  // onto an empty cache ([4, 32, 1024, 64] each: CatArrayBatchedCopy<OpaqueType<2>,
  // unsigned, 4, 64, 64>) and backward clones dk and dv back (bf16 direct copies): 48 and
  // 48 over OPT-1.3B's 24 layers as measured. Not under gradient checkpointing.
  const memwall::test::CacheKernels measured = memwall::test::measured_cache_kernels("opt-1.3b");
  REQUIRE(measured.cats == 48);
  ModelSpec m = model_preset("opt-6.7b");
  m.layers = 24, m.hidden = 2048, m.heads = 32, m.kv_heads = 32, m.ffn_hidden = 8192;
  auto layer_ops = [&](Recompute recompute) {
    TrainingConfig cfg;
    cfg.stack = default_training_stack("pytorch"), cfg.seq_len = 1024, cfg.micro_batch = 4, cfg.global_batch = 4,
    cfg.precision = Dtype::bf16, cfg.recompute = recompute;
    return memwall::test::planned_cache_kernels(cfg.stack->layer(m, step_shape(cfg), 3));
  };
  const memwall::test::CacheKernels planned = layer_ops(Recompute::none);
  CHECK(24 * planned.cats == measured.cats);
  CHECK(24 * planned.clones == measured.clones);
  CHECK(layer_ops(Recompute::full).cats == 0);
  CHECK(layer_ops(Recompute::full).clones == 0);
}

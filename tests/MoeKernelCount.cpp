#include "tests/MoeKernelCount.hpp"

#include "tests/TestHelpers.hpp"
#include "workloads/model/HfConfigReader.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

namespace memwall::test {

std::vector<KernelPlan> family_layer(const std::string& family, int64_t layer)
{
  ModelSpec m = read_hf_config(source_path("tests/data/hf_families/" + family + "/config.json"));
  ParamReader training(YAML::Load("{}"), "test", "training");
  TrainingConfig cfg;
  cfg.stack = training_stack_registry().make("pytorch", training), cfg.seq_len = 1024, cfg.micro_batch = 4,
  cfg.global_batch = 4, cfg.precision = Dtype::bf16;
  return cfg.stack->layer(m, step_shape(cfg), layer).kernels;
}

MoeCount count_moe(const std::vector<KernelPlan>& ks)
{
  MoeCount n;
  auto has = [](const KernelPlan& k, const char* s) { return k.name.find(s) != std::string::npos; };
  for (size_t i = 0; i < ks.size(); ++i) {
    const KernelPlan& k = ks[i];
    if (k.name.rfind("moe.", 0) != 0)
      continue;
    // Forward walks the list down: a loop's sync on its first entry (the one after is its
    // .e1); backward walks it up: on its last (the one before is its .e1).
    auto is_e1 = [&](size_t j) {
      return j < ks.size() && ks[j].name.size() > 3 && ks[j].name.substr(ks[j].name.size() - 3) == ".e1";
    };
    if ((k.host_sync_forward && !is_e1(i + 1)) || (k.host_sync_backward && (i == 0 || !is_e1(i - 1))))
      ++n.misplaced_syncs;
    if (k.kclass == KernelClass::gemm && k.dtype == Dtype::fp32) // a launch a pass
      n.fp32_gemms += (k.runs(true) ? 1 : 0) + (k.runs(false) ? (k.bwd_pass == GemmPass::backward ? 2 : 1) : 0);
    n.syncs += (k.host_sync_forward ? 1 : 0) + (k.host_sync_backward ? 1 : 0);
    n.sorts += has(k, ".histogram") ? 1 : 0;
    n.sort_passes += has(k, ".onesweep") ? 1 : 0;
    n.gathers += k.runs(true) && (has(k, "gather_tokens") || has(k, "gather_rows") || has(k, "_bias.gather")) ? 1 : 0;
    n.index_backwards += has(k, ".indexing_backward") ? 1 : 0;
    n.masked_fills += has(k, "masked_fill") ? 1 : 0;
    if (!has(k, "moe.router") && !has(k, "moe.shared"))
      n.experts_kept += k.saved_bytes;
  }
  return n;
}

} // namespace memwall::test

// Memory that emerges from replaying a training step, against published formulas.
#include "analysis/StepReport.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/training/TrainingStepGenerator.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

ExperimentSpec spec(const std::string& yaml) { return parse_spec(yaml, "test.yaml", ""); }

double category_max(const RunResult& r, MemCategory c) { return r.pools.at(0).max_by_category[static_cast<size_t>(c)]; }

double model_states(const RunResult& r)
{
  return category_max(r, MemCategory::weights) + category_max(r, MemCategory::gradients) +
         category_max(r, MemCategory::optimizer);
}

std::string gpt_stack(int layers, bool flash)
{
  // h = 1024, a = 16, s = 1024, b = 2, 16-bit activations, dropout on.
  return "hardware: {node: dgx-a100, gpus_per_node: 1}\n"
         "model: {layers: " +
         std::to_string(layers) +
         ", hidden: 1024, heads: 16, vocab: 1024, max_seq_len: 2048}\n"
         "training: {seq_len: 1024, global_batch: 2, micro_batch: 2, precision: bf16, flash_attention: " +
         (flash ? "true" : "false") + "}\n";
}

} // namespace

TEST_CASE("one_gpu_mixed_precision_adam_model_states_are_16_bytes_per_parameter", "[memory]")
{
  // ZeRO (Rajbhandari et al. 2020), Table I baseline, fp16 mixed precision: (2 + 2 + K)
  // Psi with K = 12. Under bf16 Megatron-LM keeps fp32 main gradients (arguments.py):
  // (2 + 4 + 12) Psi. GPT-2 small has 124,439,808 parameters (HF checkpoint).
  auto run = [](const char* precision) {
    return simulate(spec(std::string("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                                     "training: {seq_len: 1024, global_batch: 8, micro_batch: 4, precision: ") +
                         precision + ", optimizer: adam}\n"),
                    true);
  };
  RunResult r = run("fp16");
  CHECK(model_states(r) == Approx(16.0 * 124439808).epsilon(1e-12));
  CHECK(category_max(r, MemCategory::weights) == Approx(2.0 * 124439808).epsilon(1e-12));
  CHECK(category_max(r, MemCategory::optimizer) == Approx(12.0 * 124439808).epsilon(1e-12));
  CHECK(model_states(run("bf16")) == Approx(18.0 * 124439808).epsilon(1e-12));
}

TEST_CASE("fp32_adam_model_states_are_also_16_bytes_and_mixed_sgd_12", "[memory]")
{
  // fp32: 4 (weights) + 4 (gradients) + 8 (momentum, variance). Mixed-precision (fp16)
  // SGD with momentum: 2 + 2 + 4 (fp32 master) + 4 (momentum).
  const double psi = 124439808;
  RunResult fp32   = simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                                     "training: {seq_len: 512, global_batch: 2, micro_batch: 2, precision: fp32}\n"),
                              true);
  CHECK(model_states(fp32) == Approx(16.0 * psi).epsilon(1e-12));
  RunResult sgd =
      simulate(spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                    "training: {seq_len: 512, global_batch: 2, micro_batch: 2, precision: fp16, optimizer: sgd}\n"),
               true);
  CHECK(model_states(sgd) == Approx(12.0 * psi).epsilon(1e-12));
}

TEST_CASE("flash_off_activation_maximum_per_layer_matches_korthikanti_sbh_34_plus_5as_over_h", "[memory]")
{
  // Korthikanti et al. 2022, Table 2, no parallelism: sbh(34 + 5as/h) bytes per layer.
  // The per-layer share is the difference between stacks of 4 and 2 layers, which
  // cancels the embedding and head.
  const double s = 1024, b = 2, h = 1024, a = 16;
  double per_layer = s * b * h * (34 + 5 * a * s / h); // 239,075,328 bytes
  RunResult two    = simulate(spec(gpt_stack(2, false)), true);
  RunResult four   = simulate(spec(gpt_stack(4, false)), true);
  double measured  = (category_max(four, MemCategory::activations) - category_max(two, MemCategory::activations)) / 2;
  CHECK(measured == Approx(per_layer).epsilon(0.02));
}

TEST_CASE("flash_on_activation_per_layer_drops_the_s_squared_term_to_about_34_sbh", "[memory]")
{
  // With fused attention the s x s scores, softmax and dropout mask are never stored
  // (Dao et al. 2022); what remains of Korthikanti's count is 34 sbh, plus a small
  // fp32 log-sum-exp per head and token.
  const double s = 1024, b = 2, h = 1024;
  RunResult two   = simulate(spec(gpt_stack(2, true)), true);
  RunResult four  = simulate(spec(gpt_stack(4, true)), true);
  double measured = (category_max(four, MemCategory::activations) - category_max(two, MemCategory::activations)) / 2;
  CHECK(measured == Approx(34 * s * b * h).epsilon(0.02));
}

TEST_CASE("activations_are_freed_by_the_end_of_the_step_and_peak_at_the_end_of_forward", "[memory]")
{
  RunResult r             = simulate(spec(gpt_stack(2, true)), true);
  const PoolResult& p     = r.pools.at(0);
  double last_activations = 0;
  for (const auto& e : p.timeline)
    if (e.category == MemCategory::activations)
      last_activations = e.category_bytes;
  CHECK(last_activations == 0);
  CHECK(p.max_by_category[static_cast<size_t>(MemCategory::gradients)] > 0);
}

TEST_CASE("model_flops_of_a_gpt_step_match_narayanan_72_bslh2", "[flops]")
{
  // Narayanan et al. SC'21: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) per step, no recompute.
  ExperimentSpec sp = spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2-xl}\n"
                           "training: {seq_len: 1024, global_batch: 4, micro_batch: 2}\n");
  OpDag dag         = build_workload(sp);
  double flops      = 0;
  for (OpId v = 0; v < dag.size(); ++v)
    flops += dag.op(v).model_flops;
  const double B = 4, s = 1024, l = 48, h = 1600, V = 50257;
  CHECK(flops == Approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))).epsilon(0.01));
}

TEST_CASE("data_parallel_step_all_reduces_every_gradient_byte_once_in_buckets_of_at_least_25_mib", "[ddp]")
{
  // PyTorch DDP closes a bucket once it holds bucket_cap_mb (25 MiB); gradients are
  // added a layer at a time here, so a bucket is at most 25 MiB plus one layer's grads.
  // Eager PyTorch under autocast keeps fp32 gradients (4 bytes a parameter).
  ExperimentSpec sp = spec("hardware: {node: dgx-a100}\nmodel: {preset: gpt2-medium}\n"
                           "training: {stack: pytorch, seq_len: 1024, global_batch: 32, micro_batch: 2}\n");
  OpDag dag         = build_workload(sp);
  const double cap = 25.0 * 1024 * 1024, layer = 4.0 * sp.model.layer_params(0);
  std::vector<double> buckets;
  for (OpId v = 0; v < dag.size(); ++v)
    if (dag.op(v).kind == OpKind::collective)
      buckets.push_back(dag.op(v).bytes);
  double reduced = 0;
  for (double b : buckets)
    reduced += b;
  CHECK(reduced == Approx(4.0 * sp.model.total_params()).epsilon(1e-12));
  REQUIRE(buckets.size() > 1);
  for (size_t i = 0; i + 1 < buckets.size(); ++i) {
    CHECK(buckets[i] >= cap);
    CHECK(buckets[i] < cap + std::max(layer, 4.0 * sp.model.embedding_params()));
  }
}

TEST_CASE("ddp_buckets_overlap_backward_so_less_communication_is_exposed", "[ddp]")
{
  std::string base     = "hardware: {node: dgx-a100}\nmodel: {preset: gpt2-medium}\n"
                         "training: {seq_len: 1024, global_batch: 16, micro_batch: 2, overlap_grad_reduce: ";
  RunResult overlapped = simulate(spec(base + "true}\n"), true);
  RunResult serial     = simulate(spec(base + "false}\n"), true);
  Breakdown a          = step_breakdown(overlapped);
  Breakdown b          = step_breakdown(serial);
  CHECK(b.exposed_comm > 0);
  CHECK(a.exposed_comm < 0.5 * b.exposed_comm);
  CHECK(overlapped.makespan_s < serial.makespan_s);
}

// Unified memory as a user asks for it: a spec's `memory:` section (the
// MemoryReader), what a run then reports (paging, stalls, HDF5 and sweep columns), and
// its refusals. The mechanism against hand calculations: paging_test.cpp.
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// GPT-2 small on the 12 GB RTX 4070, one micro-batch of 16 x 1024 tokens without
// recomputation: explicit memory peaks at 12.9 GiB (the ~10 GiB of activations that
// micro batch 12 needs, grown by 16/12), beyond the GPU's 11.99 GiB.
const std::string oversubscribed = "hardware: {node: desktop-4070}\nmodel: {preset: gpt2}\n"
                                   "training: {seq_len: 1024, global_batch: 16, micro_batch: 16}\n";

} // namespace

TEST_CASE("training_that_does_not_fit_runs_under_unified_memory_and_reports_its_paging", "[paging]")
{
  nlohmann::json ex = run_json("explicit", oversubscribed);
  REQUIRE(ex["fits"] == false);
  nlohmann::json um = run_json("unified", oversubscribed + "memory: {mode: unified}\n");
  CHECK(um["fits"] == true);
  CHECK(um["paging"]["evictions"].get<int64_t>() > 0);
  CHECK(um["paging"]["migrated_d2h_bytes"].get<double>() > 0);
  CHECK(um["breakdown_s"]["paging_stall"].get<double>() > 0);
  // The same step with memory enough (a 24 GB RTX 4090) only computes.
  nlohmann::json big = run_json("roomy", oversubscribed + "memory: {mode: unified}\n", "--set hardware.gpu=rtx-4090");
  CHECK(big["paging"]["faults"] == 0);
  CHECK(big["breakdown_s"]["paging_stall"].get<double>() == 0);
}

TEST_CASE("a_cold_start_faults_the_weights_and_optimizer_states_in_once", "[paging]")
{
  nlohmann::json j = run_json("cold", small_training_spec + "memory: {mode: unified, start: cold}\n");
  // Nothing is evicted on the 12 GB GPU: what migrates in is the GPU's weights and
  // optimizer states at their peak, as the devices table counts them.
  double states = 0;
  for (const auto& d : j["devices"])
    if (d["kind"] == "gpu")
      states = d["max_by_category"]["weights"].get<double>() + d["max_by_category"]["optimizer"].get<double>();
  CHECK(j["paging"]["migrated_h2d_bytes"].get<double>() == Approx(states).epsilon(1e-9));
  CHECK(j["paging"]["evictions"] == 0);
  nlohmann::json warm = run_json("warm", small_training_spec + "memory: {mode: unified}\n");
  CHECK(warm["paging"]["faults"] == 0);
  CHECK(warm["step_time_s"].get<double>() < j["step_time_s"].get<double>());
}

TEST_CASE("bad_memory_sections_are_refused_with_one_line", "[paging][errors]")
{
  using Catch::Matchers::Contains;
  CHECK_THAT(refused("um_mode", small_training_spec + "memory: {mode: paged}\n"), Contains("memory.mode"));
  CHECK_THAT(refused("um_both", small_training_spec + "memory: {mode: unified, managed: [weights]}\n"),
             Contains("either mode: unified"));
  CHECK_THAT(refused("um_context", small_training_spec + "memory: {managed: [context]}\n"),
             Contains("'context' is not a category that can be managed"));
  CHECK_THAT(refused("um_scalar", small_training_spec + "memory: {managed: weights}\n"), Contains("expected a list"));
  CHECK_THAT(refused("um_remote", small_training_spec + "memory: {managed: [weights], accessed_by: [activations]}\n"),
             Contains("not managed"));
  CHECK_THAT(refused("um_typo", small_training_spec + "memory: {mode: unified, prefech: layer}\n"),
             Contains("prefech"));
  CHECK_THAT(refused("um_policy", small_training_spec + "memory: {mode: unified, eviction: random}\n"),
             Contains("memory.eviction"));
  CHECK_THAT(refused("um_offload", "hardware: {node: desktop-4070}\nmodel: {preset: gpt2}\n"
                                   "training: {seq_len: 256, global_batch: 2, micro_batch: 1, zero: 1, "
                                   "offload: {optimizer: cpu}}\nmemory: {mode: unified}\n"),
             Contains("both managed (unified memory) and offloaded"));
  CHECK_THAT(refused("um_kv_offload", "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                                      "inference: {batch: 4, prompt_len: 64, output_len: 2, offload: {kv: cpu}}\n"
                                      "memory: {managed: [kv_cache]}\n"),
             Contains("kv_cache are both managed"));
  CHECK_THAT(refused("um_weights_offload",
                     "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                     "inference: {batch: 4, prompt_len: 64, output_len: 2, offload: {weights: cpu}}\n"
                     "memory: {managed: [weights]}\n"),
             Contains("offloaded by inference.offload"));
}

TEST_CASE("unified_memory_lands_in_the_hdf5_file_the_sweep_table_and_the_parameter_list", "[paging]")
{
  std::string spec = temp_path("um_file.yaml"), h5 = temp_path("um_file.h5");
  write_file(spec, oversubscribed + "memory: {mode: unified}\n");
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  CliResult report = run_cli("report " + h5);
  CHECK_THAT(report.out, Catch::Contains("paging "));
  std::string sweep = temp_path("um_sweep.yaml"), table = temp_path("um_sweep.h5");
  write_file(sweep, "spec:\n  hardware: {node: desktop-4070}\n  model: {preset: gpt2}\n"
                    "  training: {seq_len: 1024, global_batch: 16, micro_batch: 16}\n  memory: {mode: unified}\n"
                    "grid:\n  memory.eviction: [fifo, lru]\n"
                    "metrics:\n  over: paging.demand_bytes / gpu.capacity_bytes\n");
  REQUIRE(run_cli("sweep " + sweep + " -o " + table + " -j 1").exit_code == 0);
  CliResult csv = run_cli("report " + table + " --csv");
  for (const char* column :
       {"paging.faults", "paging.evictions", "paging.migrated_h2d_bytes", "breakdown_s.paging_stall", "over"})
    CHECK_THAT(csv.out, Catch::Contains(column));
  CliResult params = run_cli("list params");
  for (const char* key : {"memory.mode", "memory.managed", "memory.prefetch", "memory.eviction", "memory.accessed_by",
                          "memory.fault_batch_s", "memory.start"})
    CHECK_THAT(params.out, Catch::Contains(key));
  CHECK_THAT(run_cli("list eviction-policies").out, Catch::Contains("fifo"));
  CHECK_THAT(run_cli("list prefetch-policies").out, Catch::Contains("layer"));
}

TEST_CASE("a_managed_kv_cache_that_fits_costs_nothing_and_one_that_does_not_pages", "[paging][inference]")
{
  // Llama-2-7B in int8 (6.7 GB) on the 12 GB RTX 4070, 16 prompts of 1024 tokens: the
  // server has KV room for 5 sequences at a time.
  const std::string spec = "hardware: {node: desktop-4070}\nmodel: {preset: llama-2-7b}\n"
                           "inference: {batch: 16, prompt_len: 1024, output_len: 16, weight_dtype: int8}\n";
  nlohmann::json ex      = run_json("kv_explicit", spec);
  nlohmann::json kv      = run_json("kv_managed", spec + "memory: {managed: [kv_cache]}\n");
  // The KV cache alone managed, within its budget: never evicted, the same run.
  CHECK(kv["paging"]["faults"] == 0);
  CHECK(kv["step_time_s"].get<double>() == ex["step_time_s"].get<double>());
  // Weights managed too hold no fixed room: all 16 sequences are admitted, their KV and
  // the weights exceed the GPU, and attention faults the evicted slabs back in.
  nlohmann::json both = run_json("kv_weights_managed", spec + "memory: {managed: [weights, kv_cache]}\n");
  CHECK(both["max_running_seqs"].get<int>() > ex["max_running_seqs"].get<int>());
  CHECK(both["paging"]["evictions"].get<int64_t>() > 0);
  CHECK(both["paging"]["faults"].get<int64_t>() > 0);
  CHECK(both["breakdown_s"]["paging_stall"].get<double>() > 0);
}

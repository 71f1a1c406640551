// A training step measured on a real H200 (calibration/data/measured/h200/power-*.*,
// 2026-11-28): a Llama-3-8B-shaped decoder of 4 layers, micro-batch 2 x 8,192 tokens, as
// the `pytorch` stack models it (Hugging Face transformers, fp32 parameters under bf16
// autocast, sdpa, fused AdamW), run back to back for a minute with the GPU at its 700 W
// limit the whole time. The replay's step time and memory against what the GPU did.
#include "calibration/Measurement.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

using namespace memwall;
using namespace memwall::test;

namespace {

nlohmann::json measured_step()
{
  std::ifstream in(source_path("calibration/data/measured/h200/power-sustained-step.json"));
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

nlohmann::json replayed_step()
{
  std::string cfg = temp_path("llama8b_4layers.json");
  write_file(cfg, R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 4,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "rope_theta": 500000.0, "tie_word_embeddings": false})");
  return run_json("h200_llama8b_4l",
                  "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {hf_config: " + cfg +
                      "}\ntraining: {stack: pytorch, seq_len: 8192, global_batch: 2, micro_batch: 2, "
                      "optimizer: adamw}\n");
}

} // namespace

TEST_CASE("an_hf_llama8b_shaped_step_on_an_h200_takes_the_time_it_took_at_the_power_limit",
          "[stack][pytorch][measured]")
{
  // 181 steps in 60 s, each timed by the wall clock around a synchronised step; the
  // median of all of them (the first 20 and the last 20 differ by 0.04 %: the step's
  // mix of GEMMs and memory-bound kernels holds its rate under the power limit).
  nlohmann::json m = measured_step();
  std::vector<double> steps;
  for (const auto& s : m["steps_start_and_seconds"])
    steps.push_back(s[1].get<double>());
  REQUIRE(steps.size() > 100);
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  double measured = steps[steps.size() / 2];
  CHECK(measured == Approx(0.332129).margin(1e-6)); // the file is the one the notes quote
  nlohmann::json j = replayed_step();
  // The shipped H200 profile (its table's large rows at full clock) with the 700 W limit
  // applied by the replay: 340.4 ms, +2.5 % (336.1, +1.2 %, with the table as swept and no
  // limit; 309.7, -6.8 %, at full clock without one).
  CHECK(j["step_time_s"].get<double>() == Approx(measured).epsilon(0.04));
}

TEST_CASE("an_hf_llama8b_shaped_step_on_an_h200_peaks_where_torch_counted_its_peak", "[stack][pytorch][measured]")
{
  // torch.cuda.max_memory_allocated over the run: weights and AdamW states of 1.92B
  // fp32 parameters (30.8 GB), the 4 layers' kept tensors and the loss's fp32 tensors over
  // the 128,256-word vocabulary. The replay's peak less the CUDA context (which the
  // allocator does not count) within 4 % (+3.0 % on 2026-11-28).
  nlohmann::json m = measured_step();
  CHECK(m["params"].get<double>() == 1923125248.0);
  double measured      = m["peak_allocated_bytes"].get<double>();
  nlohmann::json j     = replayed_step();
  const auto& gpu      = j["devices"][0];
  double context       = gpu["peak_by_category"]["context"].get<double>();
  double replayed_peak = gpu["peak_bytes"].get<double>() - context;
  CHECK(replayed_peak == Approx(measured).epsilon(0.04));
}

TEST_CASE("gpubench_output_from_the_h200_reads_back_with_its_sustained_pair_and_random_fp8_grid",
          "[calibration][measured]")
{
  // What memwall-gpubench --only gemm_fp8,gemm_sustained wrote there reads through the same
  // checks as any measurement file: 490 FP8 shapes (m 16 ... 16,384 x 49 n, k pairs, all with
  // a cuBLASLt kernel) and the pair, whose rates are the log's: 5 GEMMs of 2 x 8192^3 FLOPs in
  // 6.92 ms cold (795 TFLOP/s), 18,288 in 30.08 s after the first half-minute (668).
  std::vector<Measurement> rows = read_measurements(source_path("calibration/data/measured/h200/power-gpubench.csv"));
  size_t fp8                    = 0;
  double burst = 0, sustained = 0;
  for (const Measurement& r : rows) {
    fp8 += r.benchmark == "gemm" && r.dtype == "fp8";
    if (r.benchmark == "gemm_burst")
      burst = r.flops / r.time_s;
    if (r.benchmark == "gemm_sustained")
      sustained = r.flops / r.time_s;
  }
  CHECK(fp8 == 10 * 49);
  CHECK(burst == Approx(795e12).epsilon(0.002));
  CHECK(sustained == Approx(668e12).epsilon(0.002));
  CHECK(sustained / burst == Approx(0.84).epsilon(0.01));
}

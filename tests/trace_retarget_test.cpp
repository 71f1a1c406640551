// Recorded traces replayed on the GPU they name and on others: every kernel in a class
// (GEMM, attention, memory-bound, ...), and each class moving to another GPU by what
// bounds it (KernelTiming.hpp's recorded_kernel_timing): V100 traces on an A100 and an
// H100, and a Hugging Face training step recorded on an H100 replayed there and on an H200.
#include "analysis/StepReport.hpp"
#include "hwmodels/Catalog.hpp"
#include "sim/Simulation.hpp"
#include "sim/timing/KernelTiming.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace memwall;
using memwall::test::trace_spec;

TEST_CASE("a_recorded_kernel_moves_to_another_gpu_by_what_bounds_its_class", "[trace][retarget]")
{
  // V100 SXM2 (catalog, no profile): fp32 15.7 TFLOP/s x matmul efficiency 0.70 = 10.99
  // TFLOP/s, HBM 790 GB/s, 4 us of launch and tail per kernel. A100 80GB: fp32 19.5
  // TFLOP/s x 0.75 = 14.625 TFLOP/s; its fitted profile (hwmodels/catalog/profiles/
  // a100-sxm4-80gb.yaml, elementwise) launches in 2.5848 us and streams at 1,276.7 GB/s.
  GpuSpec v100 = gpu_preset("v100-sxm2-32gb"), a100 = gpu_preset("a100-sxm4-80gb");
  REQUIRE(v100.kernel_overhead_s == 4e-6);
  REQUIRE(a100.profile);
  const double launch = 2.5848404879705158e-06, bw = 1276667036841.7864;
  Op gemm;
  gemm.kclass  = KernelClass::gemm;
  gemm.dtype   = Dtype::fp32;
  gemm.seconds = 100e-6;
  // launch 4 us -> 2.58 us; 96 us x 10.99 / 14.625
  CHECK(recorded_kernel_timing(v100, a100, gemm).total_s(0) ==
        Approx(launch + 96e-6 * (15.7 * 0.70) / (19.5 * 0.75)).epsilon(1e-12));
  Op copy      = gemm;
  copy.kclass  = KernelClass::elementwise;
  copy.seconds = 50e-6; // 46 us at 790 GB/s = 36.3 MB, at 1,276.7 GB/s: 28.5 us
  CHECK(recorded_kernel_timing(v100, a100, copy).total_s(0) == Approx(launch + 46e-6 * 790e9 / bw).epsilon(1e-12));
  Op tiny      = copy;
  tiny.seconds = 2e-6; // all launch and tail: by the ratio of launch times
  CHECK(recorded_kernel_timing(v100, a100, tiny).total_s(0) == Approx(2e-6 * launch / 4e-6).epsilon(1e-12));
  // On the GPU it was recorded on, exactly as recorded.
  CHECK(recorded_kernel_timing(v100, v100, gemm).total_s(0) == gemm.seconds);
}

TEST_CASE("a_v100_trace_replayed_on_a100_and_h100_speeds_up_as_its_kernel_classes_explain", "[trace][retarget]")
{
  auto run = [](const std::string& node) {
    return report_json(simulate(load_spec(trace_spec("{node: " + node + ", gpus_per_node: 1}", "v100-1rank.json.gz")),
                                /*in_child=*/true, {}));
  };
  auto v100 = run("{preset: dgx-a100, gpu: v100-sxm2-32gb}"), a100 = run("dgx-a100"), h100 = run("dgx-h100");
  CHECK(a100["trace"]["recorded_on"] == "v100-sxm2-32gb");
  CHECK(a100["trace"]["replayed_on"] == "a100-sxm4-80gb");
  // Every GPU activity of the trace (4,350 kernels, 1,600 memcpys, 145 memsets; no
  // NCCL) is in one class.
  int64_t kernels = 0;
  for (const auto& [name, c] : a100["trace"]["kernel_classes"].items())
    kernels += c["kernels"].get<int64_t>();
  CHECK(kernels == 4350 + 1600 + 145);
  // Each class speeds up by about the ratio of what bounds it, the launch part moving by
  // the ratio of launch times (4 us on the V100; 2.58 and 1.91 us in the A100's and
  // H100's fitted profiles): fp32 GEMMs and convolutions by 19.5 x 0.75 / (15.7 x 0.70)
  // = 1.331 on an A100, 67 x 0.75 / (15.7 x 0.70) = 4.57 on an H100; memory-bound
  // kernels by the profiles' streaming bandwidth over the V100's 790 GB/s: 1,276.7 /
  // 790 = 1.62 and 2,353.2 / 790 = 2.98.
  GpuSpec v = gpu_preset("v100-sxm2-32gb"), a = gpu_preset("a100-sxm4-80gb"), h = gpu_preset("h100-sxm-80gb");
  auto bound = [&](const GpuSpec& to, const std::string& cls) {
    double launch = to.profile->elementwise.regimes.front().latency_s / v.kernel_overhead_s;
    double body   = cls == "gemm"
                        ? to.peak(Dtype::fp32) * to.matmul_efficiency / (v.peak(Dtype::fp32) * v.matmul_efficiency)
                        : to.profile->elementwise.bandwidth(1e9) / v.hbm_achievable_bw;
    return std::max(body, 1 / launch); // neither part speeds up more than this
  };
  for (const auto& [target, j] : {std::pair{&a, &a100}, std::pair{&h, &h100}})
    for (const std::string cls : {"gemm", "elementwise"}) {
      INFO(target->id << " " << cls);
      double speedup = (*j)["trace"]["kernel_classes"][cls]["speedup"].get<double>();
      CHECK(speedup > 1.0);
      CHECK(speedup <= bound(*target, cls) * (1 + 1e-12));
      CHECK(speedup > 0.8 * bound(*target, cls)); // most of the time is past the launch part
    }
  // The step: faster on the A100, faster again on the H100, but not by the kernels'
  // ratio alone: the host's gaps (CPU-bound stretches) stay.
  double t_v = v100["step_time_s"].get<double>(), t_a = a100["step_time_s"].get<double>(),
         t_h = h100["step_time_s"].get<double>();
  CHECK(t_a < t_v);
  CHECK(t_h < t_a);
  CHECK(t_v / t_h < h100["trace"]["kernel_classes"]["gemm"]["speedup"].get<double>());
}

TEST_CASE("the_h100_hugging_face_trace_replays_on_an_h100_as_recorded_with_its_kernels_classed", "[trace][classes]")
{
  // tests/data/traces/h100-llama1b-hf-train.json.gz: one HF Llama-3.2-1B-shaped training
  // step on an H100 (3,724 GPU activities, 264.06 ms of kernel time summed from the
  // trace's own durations). Its GEMMs are cuBLAS 12.8's nvjet_sm90_* (451 of them) and a
  // CUTLASS SIMT sgemm; attention cuDNN's SDPA; the rest PyTorch's unfused kernels, fused
  // AdamW (multi_tensor_apply), the fp32 loss (cunn_SoftMax*) and cuDNN's attention
  // helpers. Replayed on an H100 (the GPU it names: "NVIDIA H100 80GB HBM3"): its kernel
  // time within 3 %, and under 2 % of it in no class.
  auto j = report_json(
      simulate(load_spec(trace_spec("{node: dgx-h100, gpus_per_node: 1}", "h100-llama1b-hf-train.json.gz")), true, {}));
  CHECK(j["trace"]["recorded_on"] == "h100-sxm-80gb");
  double kernels = 0, time = 0;
  for (const auto& [name, c] : j["trace"]["kernel_classes"].items()) {
    kernels += c["kernels"].get<double>();
    time += c["replayed_s"].get<double>();
  }
  CHECK(kernels == 3724);
  CHECK(time == Approx(0.264057).epsilon(0.03));
  CHECK(j["step_time_s"].get<double>() == Approx(0.264057).epsilon(0.03));
  CHECK(j["trace"]["unclassified_kernel_time_s"].get<double>() < 0.02 * time);
  CHECK(j["trace"]["kernel_classes"]["gemm"]["kernels"] == 452);
  CHECK(j["trace"]["kernel_classes"]["attention"]["kernels"] == 40); // 16 forward, 24 backward SDPA kernels
}

TEST_CASE("an_h100_trace_on_an_h200_moves_its_gemms_by_compute_and_its_elementwise_kernels_by_bandwidth",
          "[trace][classes][retarget]")
{
  // The H200 has the H100's SMs, clocks and tensor cores (989.4 TFLOP/s bf16 both) on
  // faster HBM: measured copy kernels 2,986 and 4,202 GB/s (calibration/data/measured),
  // a ratio of 1.41. So the trace's GEMMs and attention run as recorded (x1.00 within
  // 1 %) and its memory-bound kernels speed up by about the bandwidth ratio (the
  // profiles' streaming curves: within 10 % of 1.41, a little less for the launch part).
  auto j = report_json(
      simulate(load_spec(trace_spec("{node: hgx-h200, gpus_per_node: 1}", "h100-llama1b-hf-train.json.gz")), true, {}));
  const auto& c = j["trace"]["kernel_classes"];
  CHECK(c["gemm"]["speedup"].get<double>() == Approx(1.0).epsilon(0.01));
  CHECK(c["attention"]["speedup"].get<double>() == Approx(1.0).epsilon(0.01));
  CHECK(c["elementwise"]["speedup"].get<double>() == Approx(4202.0 / 2986).epsilon(0.10));
}

// A GPU changed from a profiled catalog GPU is timed as changed (hwmodels/ProfileScaling):
// its measured profile scaled by kernel class, GEMMs by the dtype's peak, memory-bound
// kernels by the sustained HBM bandwidth; never a value the user wrote ignored.
#include "hwmodels/Catalog.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "sim/timing/KernelTiming.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// One H100 of a DGX H100 with `gpu` (a mapping's keys) changed.
GpuSpec h100_with(const std::string& gpu)
{
  return parse_spec("hardware: {node: dgx-h100, gpus_per_node: 1, gpu: {" + gpu +
                        "}}\nmodel: {preset: gpt2}\ntraining: {seq_len: 1024, global_batch: 8, micro_batch: 8}\n",
                    "test.yaml", "")
      .cluster.node.gpu;
}

Op kernel(KernelClass kclass, double flops, double bytes, GemmShape shape = {})
{
  Op op    = kernel_op(DeviceRef{}, kclass, Dtype::bf16, flops, bytes, flops, "k");
  op.shape = shape;
  return op;
}

} // namespace

TEST_CASE("halving_a_profiled_h100s_hbm_peak_bw_doubles_a_memory_bound_kernels_streaming_time", "[profile][timing]")
{
  // The datasheet's 3.35 TB/s halved; the sustained bandwidth (2,986 GB/s measured) keeps
  // its fraction of the peak, and the measured elementwise curve streams at half its rate:
  // a 4 GB kernel's streaming time doubles, its launch stays.
  GpuSpec base = gpu_preset("h100-sxm-80gb"), half = h100_with("hbm_peak_bw: 1.675e12");
  CHECK(half.hbm_achievable_bw == Approx(base.hbm_achievable_bw / 2).epsilon(1e-12));
  REQUIRE(half.profile);
  Op copy             = kernel(KernelClass::elementwise, 1e9, 4e9);
  KernelTiming before = kernel_timing(base, copy), after = kernel_timing(half, copy);
  CHECK(after.memory_s(copy.bytes) == Approx(2 * before.memory_s(copy.bytes)).epsilon(1e-9));
  CHECK(after.overhead_s == before.overhead_s);
  CHECK(after.total_s(copy.bytes) / before.total_s(copy.bytes) == Approx(2).epsilon(0.02));
  CHECK(half.profile->scaled == "HBM x0.50");
}

TEST_CASE("a_lower_bf16_peak_slows_a_measured_compute_bound_gemm_by_the_peaks_ratio", "[profile][timing]")
{
  // An 8192^3 bf16 GEMM on an H100 is compute-bound (1.1 TFLOP in ~1.5 ms against 0.4 GB
  // of operands in ~0.15 ms): at half the peak its time is close to twice, a little
  // under, as the operands' streaming (unchanged) blends in.
  GpuSpec base = gpu_preset("h100-sxm-80gb"), half = h100_with("peak_flops: {bf16: 494.7e12}");
  Op gemm = kernel(KernelClass::gemm, 2.0 * 8192 * 8192 * 8192, 3 * 2.0 * 8192 * 8192, GemmShape{8192, 8192, 8192});
  double ratio = kernel_timing(half, gemm).total_s(gemm.bytes) / kernel_timing(base, gemm).total_s(gemm.bytes);
  CHECK(ratio > 1.9);
  CHECK(ratio <= 2.0);
  // fp16 was not changed: its GEMMs keep their time.
  Op fp16    = gemm;
  fp16.dtype = Dtype::fp16;
  CHECK(kernel_timing(half, fp16).total_s(fp16.bytes) == kernel_timing(base, fp16).total_s(fp16.bytes));
  CHECK(half.profile->scaled == "bf16 peak x0.50");
}

TEST_CASE("a_measured_gemm_table_corrects_the_scaled_model_by_what_it_measured_against_the_fitted_one",
          "[profile][timing]")
{
  // The H100's bf16 forward table holds the sweep A = 4096, B = 14336 (a Llama-3-8B MLP
  // GEMM). Scaled, a measured shape's time is the scaled model's times the table's
  // measured / fitted ratio, so it moves by exactly the models' ratio.
  GpuSpec base = gpu_preset("h100-sxm-80gb"), half = h100_with("peak_flops: {bf16: 494.7e12}");
  const GpuProfile &p = *base.profile, &q = *half.profile;
  const double b16 = base.peak(Dtype::bf16), h16 = half.peak(Dtype::bf16);
  const GemmModel* fitted = p.gemm_model(Dtype::bf16, b16, GemmPass::forward);
  const GemmModel* scaled = q.gemm_model(Dtype::bf16, h16, GemmPass::forward);
  REQUIRE(fitted);
  REQUIRE(scaled);
  CHECK(scaled->peak_flops == Approx(fitted->peak_flops / 2).epsilon(1e-12));
  // The logical GEMM whose sweep the table holds, in the orders of (tokens, 4096, 14336)
  // the table's correction answers for.
  const double tokens = 4096;
  int hits            = 0;
  for (auto [m, n, k] : {std::tuple{tokens, 4096.0, 14336.0}, std::tuple{tokens, 14336.0, 4096.0}}) {
    double measured_over_fit = p.gemm_time(Dtype::bf16, b16, GemmPass::forward, m, n, k) / fitted->time(m, n, k);
    if (std::abs(measured_over_fit - 1) < 1e-12)
      continue; // outside the table in this order
    ++hits;
    CHECK(q.gemm_time(Dtype::bf16, h16, GemmPass::forward, m, n, k) ==
          Approx(scaled->time(m, n, k) * measured_over_fit).epsilon(1e-12));
  }
  CHECK(hits >= 1);
}

TEST_CASE("a_peak_under_a_measured_profile_cannot_put_mfu_above_one_and_the_summary_says_it_scaled",
          "[profile][timing]")
{
  // A tenth of the bf16 peak once kept the measured GEMM times and reported MFU 275 %.
  const std::string spec = "hardware: {node: dgx-h100, gpus_per_node: 1, gpu: {peak_flops: {bf16: 98.94e12}}}\n"
                           "model: {preset: gpt2}\ntraining: {seq_len: 1024, global_batch: 16, micro_batch: 16}\n";
  nlohmann::json j       = run_json("profile_scaled_mfu", spec);
  CHECK(j["mfu"].get<double>() < 1);
  nlohmann::json as_measured = run_json("profile_measured_mfu", "hardware: {node: dgx-h100, gpus_per_node: 1}\n"
                                                                "model: {preset: gpt2}\ntraining: {seq_len: 1024, "
                                                                "global_batch: 16, micro_batch: 16}\n");
  CHECK(j["step_time_s"].get<double>() > 2 * as_measured["step_time_s"].get<double>());
  CliResult text = run_cli("run " + temp_path("profile_scaled_mfu.yaml"));
  CHECK_THAT(text.out, Catch::Contains("GEMMs measured (scaled: bf16 peak x0.10)"));
}

TEST_CASE("bf16_and_fp16_given_the_same_new_peak_time_a_measured_gemm_alike", "[profile][timing]")
{
  // The H100 measured bf16 GEMMs; fp16 runs on the same tensor cores and borrows them. At
  // one new peak for both, a GEMM of the measured table's sweep takes the same time in
  // either (fp16 once lost the table's correction and ran 3 % faster on Llama-3-8B).
  GpuSpec half = h100_with("peak_flops: {bf16: 500e12, fp16: 500e12}");
  Op bf16      = kernel(KernelClass::gemm, 2.0 * 4096 * 14336 * 4096,
                        2.0 * (4096.0 * 4096 + 4096.0 * 14336 + 4096.0 * 14336), GemmShape{4096, 14336, 4096});
  Op fp16      = bf16;
  fp16.dtype   = Dtype::fp16;
  CHECK(kernel_timing(half, fp16).total_s(fp16.bytes) ==
        Approx(kernel_timing(half, bf16).total_s(bf16.bytes)).epsilon(1e-12));
  // And fp16 left as measured beside a changed bf16 keeps its measured time.
  GpuSpec base = gpu_preset("h100-sxm-80gb"), bf16_only = h100_with("peak_flops: {bf16: 500e12}");
  CHECK(kernel_timing(bf16_only, fp16).total_s(fp16.bytes) == kernel_timing(base, fp16).total_s(fp16.bytes));
}

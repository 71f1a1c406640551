// Calibration: the measurement CSV, the importers, the fitted models and their error on
// points held out of the fit, and bad calibration input. The measured data are Vidur's
// and LLMCompass's published A100/H100 profiles (calibration/data, MIT and BSD-3).
#include "base/TextFile.hpp"
#include "calibration/Measurement.hpp"
#include "calibration/fit/ProfileFit.hpp"
#include "calibration/importers/Importer.hpp"
#include "calibration/kernels/BenchGroups.hpp"
#include "hwmodels/Catalog.hpp"
#include "hwmodels/profile/GemmModel.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

using namespace memwall;
using namespace memwall::test;

namespace {

std::vector<Measurement> import(const std::string& format, const std::string& relative, const std::string& gpu)
{
  std::string path = source_path("calibration/data/" + relative);
  return importer_registry().make(format, ImportRequest{path, read_text_file(path, "data"), gpu});
}

std::vector<Measurement> only(const std::vector<Measurement>& rows, const std::string& benchmark)
{
  std::vector<Measurement> out;
  for (const Measurement& m : rows)
    if (m.benchmark == benchmark)
      out.push_back(m);
  return out;
}

CheckLine line_of(const std::vector<CheckLine>& lines, const std::string& benchmark)
{
  for (const CheckLine& l : lines)
    if (l.benchmark == benchmark)
      return l;
  FAIL("no check line for " << benchmark);
  return {};
}

CheckLine gemm_held_out(const std::string& dir, const std::string& gpu)
{
  GpuSpec spec = gpu_preset(gpu);
  std::vector<Measurement> fit_rows =
      only(import("vidur-compute", "vidur/compute/" + dir + "/Llama-2-7b-hf-mlp.csv", gpu), "gemm");
  std::vector<Measurement> check_rows =
      only(import("vidur-compute", "vidur/compute/" + dir + "/Llama-2-70b-hf-mlp.csv", gpu), "gemm");
  GpuProfile p;
  p.gpu               = gpu;
  p.gemm[Dtype::fp16] = fit_gemm(fit_rows, spec, Dtype::fp16);
  size_t skipped      = 0;
  return line_of(check_profile(p, check_rows, skipped), "gemm:fp16");
}

} // namespace

TEST_CASE("one_wave_more_than_the_sms_doubles_a_gemms_time", "[calibration][gemm]")
{
  // By hand: 108 SMs at 312 TFLOP/s, no launch, no memory term (infinite bandwidth),
  // a tile prologue/epilogue worth 4096 K steps (so splitting K never pays) and small
  // tiles at a quarter rate (so they never pay either). m = 128, n = 128 x 108 is 108
  // 128x128 tiles: one wave of 2 x 128 x 128 x (4096 + 4096) FLOP-equivalents per SM
  // at 312e12 / 108 FLOP/s. One more column (n = 128 x 109) needs a second wave (or 55
  // 128x256 tiles, one wave of twice the work): twice the time for 1 % more FLOPs.
  GemmModel g;
  g.peak_flops = 312e12, g.sms = 108, g.efficiency = 1, g.small_tile_efficiency = 0.25;
  g.launch_s = 0, g.k_overhead = 4096, g.bandwidth = 1e30, g.blend = 8;
  double one_wave = 2.0 * 128 * 128 * (4096 + 4096) / (312e12 / 108);
  CHECK(g.time(128, 128 * 108, 4096) == Approx(one_wave).epsilon(1e-6));
  CHECK(g.time(128, 128 * 109, 4096) == Approx(2 * one_wave).epsilon(1e-6));
}

TEST_CASE("a_skinny_gemm_is_bound_by_streaming_its_weights", "[calibration][gemm]")
{
  // m = 1: the 12288 x 12288 fp16 weights (302 MB) must stream once: at 1.5 TB/s
  // 201 us. The compute side, 192 64x64 tiles (split 16 ways: 29 waves of 832 K steps at
  // 0.75 x 0.64 of 312 TFLOP/s over 108 SMs), takes 140 us. With a large blend exponent
  // (a roofline's max) the time is the memory time within 1 %.
  GemmModel g;
  g.peak_flops = 312e12, g.sms = 108, g.launch_s = 0, g.bandwidth = 1.5e12, g.blend = 64;
  double memory = 2.0 * (12288.0 * 12288 + 12288 + 12288) / 1.5e12;
  CHECK(g.time(1, 12288, 12288) == Approx(memory).epsilon(0.01));
}

TEST_CASE("gemm_fit_on_llama2_7b_shapes_predicts_llama2_70b_shapes", "[calibration][gemm][fit]")
{
  // Fitted on the GEMMs of Llama-2-7B (tp 1-8, 1-4096 tokens), checked on Llama-2-70B's
  // (other N and K). Measured with this model: A100 median 4.3 %, 90th percentile 13.0 %;
  // H100 8.5 % and 19.9 % (Vidur's H100 data was taken without an L2 flush and has
  // kernel-selection jumps the tile model does not follow; calibration/README.md). The
  // issue's targets are 5 % and 12 %: these bounds keep the fit from getting worse.
  CheckLine a100 = gemm_held_out("a100", "a100-sxm4-80gb");
  INFO("A100 median " << a100.median_error << " p90 " << a100.p90_error);
  CHECK(a100.points > 4000);
  CHECK(a100.median_error <= 0.05);
  CHECK(a100.p90_error <= 0.14);
  CheckLine h100 = gemm_held_out("h100", "h100-sxm-80gb");
  INFO("H100 median " << h100.median_error << " p90 " << h100.p90_error);
  CHECK(h100.median_error <= 0.09);
  CHECK(h100.p90_error <= 0.21);
}

TEST_CASE("memory_bound_kernels_fitted_per_family_on_llama2_7b_predict_llama2_70bs_within_11_percent",
          "[calibration][elementwise]")
{
  // Vidur's norm, rotary, activation and residual-add kernels of Llama-2-7B (tp 1-8,
  // 1-4096 tokens), each family fitted apart, checked on Llama-2-70B's (other widths).
  // Measured: A100 median 5.2 / 6.0 / 4.5 / 3.2 % (norm / rope / activation / residual),
  // H100 10.0 / 5.9 / 5.1 / 3.7 %. One curve over all of them missed by 27-47 % (A100)
  // and 22-47 % (H100): an add streams at ~1.8 TB/s and an RMSNorm at ~0.7 on the A100.
  for (const auto& [dir, gpu] : {std::pair{"a100", "a100-sxm4-80gb"}, std::pair{"h100", "h100-sxm-80gb"}}) {
    std::string folder                  = std::string("vidur/compute/") + dir;
    std::vector<Measurement> fit_rows   = import("vidur-compute", folder + "/Llama-2-7b-hf-mlp.csv", gpu);
    std::vector<Measurement> check_rows = import("vidur-compute", folder + "/Llama-2-70b-hf-mlp.csv", gpu);
    GpuProfile p                        = fit_profile(fit_rows, gpu_preset(gpu), "test");
    GpuProfile one                      = p;
    one.elementwise_families.clear(); // every family on the curve over all kernels
    size_t skipped                   = 0;
    std::vector<CheckLine> by_family = check_profile(p, check_rows, skipped);
    std::vector<CheckLine> by_one    = check_profile(one, check_rows, skipped);
    for (KernelFamily f : {KernelFamily::norm, KernelFamily::rope, KernelFamily::activation, KernelFamily::residual}) {
      CheckLine fam = line_of(by_family, elementwise_benchmark(f));
      CheckLine all = line_of(by_one, elementwise_benchmark(f));
      INFO(gpu << " " << kernel_family_name(f) << " median " << fam.median_error << " one curve " << all.median_error);
      CHECK(fam.points >= 1044);
      CHECK(fam.median_error <= 0.11);
      CHECK(fam.median_error < all.median_error / 2);
    }
  }
}

TEST_CASE("a_piecewise_curve_recovers_two_size_regimes", "[calibration][curve]")
{
  // By hand: 10 us + bytes / 1 GB/s up to 1 MiB, 50 us + bytes / 100 GB/s beyond (a
  // protocol switch). One line over both regimes cannot fit; two recover both exactly.
  std::vector<Measurement> pts;
  for (double b = 1024; b <= 1 << 30; b *= 2) {
    Measurement m;
    m.bytes  = b;
    m.time_s = b <= 1 << 20 ? 10e-6 + b / 1e9 : 50e-6 + b / 1e11;
    pts.push_back(m);
  }
  LatencyBandwidthCurve c = fit_curve(pts);
  REQUIRE(c.regimes.size() == 2);
  CHECK(c.regimes[0].upto_bytes == 1 << 20);
  CHECK(c.regimes[0].latency_s == Approx(10e-6).epsilon(1e-6));
  CHECK(c.regimes[0].bandwidth == Approx(1e9).epsilon(1e-6));
  CHECK(c.regimes[1].latency_s == Approx(50e-6).epsilon(1e-6));
  CHECK(c.regimes[1].bandwidth == Approx(1e11).epsilon(1e-6));
  CHECK(std::isinf(c.regimes[1].upto_bytes));
}

TEST_CASE("an_all_reduce_fitted_by_regime_predicts_another_measurement_within_8_percent", "[calibration][collective]")
{
  // Fitted on Vidur's 4-GPU NVLink all-reduces of an A100 DGX (2 KiB - 1 GiB), checked
  // on LLMCompass's independent 4 x A100 NVLink measurement (8 B - 16 GiB).
  GpuSpec spec                   = gpu_preset("a100-sxm4-80gb");
  std::vector<Measurement> vidur = import("vidur-network", "vidur/network/a100_dgx/all_reduce.csv", spec.id);
  GpuProfile p                   = fit_profile(vidur, spec, "test");
  std::vector<Measurement> llmcompass =
      import("llmcompass-allreduce", "llmcompass/allreduce_A100_4gpu_nvlink.csv", spec.id);
  size_t skipped = 0;
  CheckLine l    = line_of(check_profile(p, llmcompass, skipped), "all_reduce 4x4");
  INFO("median " << l.median_error);
  CHECK(l.points == 32);
  CHECK(l.median_error <= 0.08);
  // One latency-bandwidth line over all sizes overestimates small messages several-fold.
  const CollectiveCurve* fitted = p.collective("all_reduce", 4, 4);
  REQUIRE(fitted);
  std::vector<Measurement> four;
  for (const Measurement& m : vidur)
    if (m.ranks == 4 && m.ranks_per_node == 4)
      four.push_back(m);
  LatencyBandwidthCurve line = fit_curve(four, 1);
  CHECK(line.time(8) > 2 * fitted->curve.time(8));
}

TEST_CASE("a_send_recv_curve_fitted_on_every_other_size_predicts_the_sizes_between_within_8_percent",
          "[calibration][copy]")
{
  // Vidur's NCCL send/recv between two GPUs of one DGX (A100 and H100; 994 sizes from
  // 2 KiB to 2 GiB each): fitted on the even-numbered sizes, checked on the odd ones,
  // none of which the fit saw. The replay times a pipeline send inside a node by this curve.
  for (const auto& [dir, gpu] : {std::pair{"a100_dgx", "a100-sxm4-80gb"}, std::pair{"h100_dgx", "h100-sxm-80gb"}}) {
    std::vector<Measurement> in_node;
    for (const Measurement& m : import("vidur-network", std::string("vidur/network/") + dir + "/send_recv.csv", gpu))
      if (m.ranks_per_node == 2)
        in_node.push_back(m);
    std::sort(in_node.begin(), in_node.end(),
              [](const Measurement& a, const Measurement& b) { return a.bytes < b.bytes; });
    std::vector<Measurement> fit_rows, check_rows;
    for (size_t i = 0; i < in_node.size(); ++i)
      (i % 2 == 0 ? fit_rows : check_rows).push_back(in_node[i]);
    GpuProfile p   = fit_profile(fit_rows, gpu_preset(gpu), "test");
    size_t skipped = 0;
    CheckLine l    = line_of(check_profile(p, check_rows, skipped), "send_recv 2x2");
    INFO(gpu << " median " << l.median_error << " p90 " << l.p90_error);
    CHECK(l.points == 497);
    CHECK(l.median_error <= 0.08);
  }
}

TEST_CASE("the_a100_40gb_profile_is_the_80gb_fit_with_memory_bound_bandwidths_scaled_by_the_stream_ratio",
          "[calibration][catalog]")
{
  // No A100 40GB measurements exist in calibration/data. The part is the 80GB's GA100 at
  // the same clocks on slower HBM2: its shipped profile is derived from the 80GB fit with
  // the GEMM's operand streaming and the elementwise bandwidth times the parts' STREAM
  // triad ratio, 1358 / 1794 GB/s (RRZE-HPC gpu-stream); everything else is the same.
  GpuSpec a40g = gpu_preset("a100-sxm4-40gb"), a80g = gpu_preset("a100-sxm4-80gb");
  REQUIRE(a40g.profile);
  REQUIRE(a80g.profile);
  CHECK(a40g.profile->derived_from == "a100-sxm4-80gb");
  CHECK(a80g.profile->derived_from.empty());
  const double ratio   = 1358.0 / 1794.0;
  const GemmModel& g40 = a40g.profile->gemm.at(Dtype::fp16);
  const GemmModel& g80 = a80g.profile->gemm.at(Dtype::fp16);
  CHECK(g40.bandwidth == Approx(g80.bandwidth * ratio).epsilon(1e-12));
  CHECK(g40.efficiency == g80.efficiency);
  CHECK(g40.launch_s == g80.launch_s);
  CHECK(a40g.profile->elementwise.time(1e9) - a40g.profile->elementwise.time(0) ==
        Approx((a80g.profile->elementwise.time(1e9) - a80g.profile->elementwise.time(0)) / ratio).epsilon(1e-12));
  const Regime& norm40 = a40g.profile->elementwise_families.at(KernelFamily::norm).regime(1e9);
  const Regime& norm80 = a80g.profile->elementwise_families.at(KernelFamily::norm).regime(1e9);
  CHECK(norm40.bandwidth == Approx(norm80.bandwidth * ratio).epsilon(1e-12));
  CHECK(norm40.latency_s == norm80.latency_s);
  CHECK(a40g.profile->collectives.size() == a80g.profile->collectives.size());
  // A compute-bound GEMM takes the same time on both. A skinny one's weight streaming
  // (302 MB at m = 1) is 1794 / 1358 = 1.32x slower on the 40GB part; blended with its
  // compute term (which does not change) the whole GEMM is slower by less than that.
  CHECK(g40.time(8192, 8192, 8192) == Approx(g80.time(8192, 8192, 8192)).epsilon(0.01));
  double skinny = g40.time(1, 12288, 12288) / g80.time(1, 12288, 12288);
  CHECK(skinny > 1.15);
  CHECK(skinny < 1 / ratio);
}

TEST_CASE("the_nccl_tests_importer_reads_ranks_hosts_sizes_and_out_of_place_times", "[calibration][import]")
{
  // nccl-tests all_reduce_perf output of 2 nodes x 2 GPUs (format of nccl-tests 2.13).
  std::string text =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20\n"
      "# Collective test starting: all_reduce_perf\n"
      "#  Rank  0 Group  0 Pid  101 on     node1 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid  102 on     node1 device  1 [0x0f] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  2 Group  0 Pid  201 on     node2 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  3 Group  0 Pid  202 on     node2 device  1 [0x0f] NVIDIA A100-SXM4-80GB\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "           8             2     float     sum      -1    36.73    0.00    0.00      0    35.88    0.00    0.00   "
      "   0\n"
      "        1024           256     float     sum      -1    40.50    0.03    0.04      0    40.10    0.03    0.04   "
      "   0\n"
      "# Avg bus bandwidth    : 0.02\n";
  auto rows = importer_registry().make("nccl-tests", ImportRequest{"run.txt", text, "a100-sxm4-80gb"});
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].benchmark == "all_reduce");
  CHECK(rows[0].ranks == 4);
  CHECK(rows[0].ranks_per_node == 2);
  CHECK(rows[1].bytes == 1024);
  CHECK(rows[1].time_s == Approx(40.50e-6));
}

TEST_CASE("measurements_written_then_read_are_the_same", "[calibration][csv]")
{
  auto rows = import("llmcompass-matmul", "llmcompass/matmul_A100.csv", "a100-sxm4-80gb");
  // LLMCompass: 64 x 12288 x 12288 in 0.1900 ms.
  CHECK(rows[0].m == 64);
  CHECK(rows[0].time_s == Approx(0.19e-3));
  std::string path = temp_path("meas.csv");
  write_measurements(path, rows);
  auto back = read_measurements(path);
  REQUIRE(back.size() == rows.size());
  CHECK(back[5].n == rows[5].n);
  CHECK(back[5].time_s == Approx(rows[5].time_s).epsilon(1e-9));
  CHECK(measurements_csv(back) == measurements_csv(rows));
}

TEST_CASE("bad_calibration_input_is_one_line_and_exit_code_2", "[calibration][errors]")
{
  std::string header = "gpu,benchmark,dtype,m,n,k,ranks,ranks_per_node,bytes,flops,time_s,samples,source\n";
  struct Case {
    std::string name, text, expect;
  };
  std::vector<Case> cases{
      {"unknown_column.csv", "gpu,benchmark,time_s,speed\na100-sxm4-80gb,gemm,1,2\n", "unknown column 'speed'"},
      {"empty.csv", "", "empty file"},
      {"negative.csv", header + "a100-sxm4-80gb,elementwise,,,,,,,1024,,-1e-6,,\n", "is negative"},
      {"unknown_benchmark.csv", header + "a100-sxm4-80gb,gemv,,,,,,,1024,,1e-6,,\n", "unknown benchmark 'gemv'"},
      {"sustained_no_flops.csv", header + "a100-sxm4-80gb,gemm_sustained,bf16,8192,8192,8192,,,,,1.5,1000,\n",
       "a gemm_sustained row needs flops"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::string path = temp_path(c.name);
    write_file(path, c.text);
    std::string out = temp_path("profile_" + c.name + ".yaml");
    CliResult r     = run_cli("calibrate fit " + path + " -o " + out);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.name) && Catch::Contains(c.expect));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(std::ifstream(out).good());
  }
  // A profile of one GPU given to a spec of another.
  std::string meas = temp_path("a40.csv");
  write_file(meas, header + "a40,elementwise,,,,,,,1024,,3e-6,,\na40,elementwise,,,,,,,1048576,,1e-5,,\n"
                            "a40,elementwise,,,,,,,1073741824,,2e-3,,\n");
  std::string profile = temp_path("a40.yaml");
  REQUIRE(run_cli("calibrate fit " + meas + " -o " + profile).exit_code == 0);
  CliResult r = run_cli("run " + source_path("examples/gpt2-1gpu-a100.yaml") + " --set hardware.profile=" + profile);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("hardware.profile") && Catch::Contains("is a profile of a40"));
  // A profile that is not YAML at all: its file and line, exit 2.
  std::string broken = temp_path("broken_profile.yaml");
  write_file(broken, "gpu: a100-sxm4-80gb\ngemm: {fp16: [\n");
  CliResult b = run_cli("run " + source_path("examples/gpt2-1gpu-a100.yaml") + " --set hardware.profile=" + broken);
  CHECK(b.exit_code == 2);
  CHECK_THAT(b.err, Catch::Contains("broken_profile.yaml:") && Catch::Contains("malformed YAML"));
  // A family the profiles do not know: the key, what is allowed, exit 2.
  std::string family = temp_path("family_profile.yaml");
  write_file(family, "gpu: a100-sxm4-80gb\nelementwise: [{upto_bytes: inf, latency_s: 2e-6, bandwidth: 1e12}]\n"
                     "elementwise_families: {softmax: [{upto_bytes: inf, latency_s: 2e-6, bandwidth: 1e12}]}\n");
  CliResult f = run_cli("run " + source_path("examples/gpt2-1gpu-a100.yaml") + " --set hardware.profile=" + family);
  CHECK(f.exit_code == 2);
  CHECK_THAT(f.err, Catch::Contains("family_profile.yaml") && Catch::Contains("softmax") && Catch::Contains("norm"));
  CHECK(std::count(f.err.begin(), f.err.end(), '\n') == 1);
  // No GPU here (or no microbenchmarks built): measure says so with exit 2.
  CliResult m = run_cli("calibrate measure -o " + temp_path("m.csv"));
  CHECK(m.exit_code == 2);
  CHECK_FALSE(std::ifstream(temp_path("m.csv")).good());
  // A group measure does not know: named with the groups allowed, before any GPU is looked for.
  CliResult g = run_cli("calibrate measure --only gemm,gemm_fp9 -o " + temp_path("m.csv"));
  CHECK(g.exit_code == 2);
  CHECK_THAT(g.err, Catch::Contains("--only") && Catch::Contains("'gemm_fp9'") && Catch::Contains("gemm_sustained"));
  CHECK(std::count(g.err.begin(), g.err.end(), '\n') == 1);
  CHECK_FALSE(std::ifstream(temp_path("m.csv")).good());
}

TEST_CASE("a_gemms_burst_and_sustained_rates_are_read_and_left_out_of_the_fit", "[calibration][csv]")
{
  // memwall-gpubench's pair (the rate the power limit lets a GPU hold): read as
  // measurements, fitted into nothing yet, so a profile is the same with or without them.
  std::string header = "gpu,benchmark,dtype,m,n,k,ranks,ranks_per_node,bytes,flops,time_s,samples,source\n";
  std::string copies = "a40,elementwise,,,,,,,1024,,3e-6,,\na40,elementwise,,,,,,,1048576,,1e-5,,\n"
                       "a40,elementwise,,,,,,,1073741824,,2e-3,,\n";
  // 8192^3 bf16: 1.0995e12 FLOPs a GEMM; 5 cold in 6.94 ms (792 TFLOP/s), 20,000 loaded.
  std::string pair = "a40,gemm_burst,bf16,8192,8192,8192,,,,5.4976e12,6.94e-3,5,\n"
                     "a40,gemm_sustained,bf16,8192,8192,8192,,,,2.19902e16,32.5,20000,\n";
  std::string with = temp_path("with_pair.csv"), without = temp_path("without_pair.csv");
  write_file(with, header + copies + pair);
  write_file(without, header + copies);
  auto rows = read_measurements(with);
  REQUIRE(rows.size() == 5);
  CHECK(rows[4].benchmark == "gemm_sustained");
  CHECK(rows[4].flops / rows[4].time_s == Approx(676.6e12).epsilon(1e-3));
  std::string a = temp_path("with_pair.yaml"), b = temp_path("without_pair.yaml");
  REQUIRE(run_cli("calibrate fit " + with + " -o " + a).exit_code == 0);
  REQUIRE(run_cli("calibrate fit " + without + " -o " + b).exit_code == 0);
  std::string pa = read_file(a), pb = read_file(b);
  CHECK(pa.substr(pa.find("elementwise")) == pb.substr(pb.find("elementwise")));
}

TEST_CASE("a_benchmark_group_list_names_known_groups_and_no_empty_one", "[calibration][gpubench]")
{
  // What gpubench --only and calibrate measure --only take: known names, comma-separated, a
  // name twice measured once; an unknown or empty name refused with what was wrong.
  std::string error;
  auto two = gpubench::parse_bench_groups("gemm_sustained,gemm_fp8,gemm_sustained", error);
  REQUIRE(two);
  CHECK(*two == std::set<std::string>{"gemm_fp8", "gemm_sustained"});
  for (const char* empty : {"", ",gemm", "gemm,", "gemm,,nccl"}) {
    INFO(empty);
    CHECK_FALSE(gpubench::parse_bench_groups(empty, error));
    CHECK_THAT(error, Catch::Contains("empty group name"));
  }
  CHECK_FALSE(gpubench::parse_bench_groups("gemm,GEMM", error));
  CHECK(error == "'GEMM' is not a group");
  CHECK(gpubench::bench_groups().size() == 8);
}

// Equal footing (issue 50): a GPU without measured NCCL curves takes those of a GPU of its
// NVLink generation, scaled by the NVLink ratio, and every result names where each part of
// its timing came from, so that a comparison of machines can say which differences are
// calibration rather than hardware.
#include "app/sweep/TimingComparison.hpp"
#include "hwmodels/Catalog.hpp"
#include "hwmodels/TimingSources.hpp"
#include "hwmodels/profile/GpuProfile.hpp"
#include "sim/spec/ExperimentSpec.hpp"
#include "sim/timing/CollectiveTiming.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace memwall;
using namespace memwall::test;

namespace {

// Bus bandwidth of an all-reduce of `bytes` over 8 GPUs of one node from the GPU's
// curve: the algorithm bandwidth of the size's regime times 2 (n - 1) / n.
double all_reduce_busbw(const GpuSpec& g, double bytes)
{
  REQUIRE(g.profile);
  const CollectiveCurve* c = g.profile->collective("all_reduce", 8, 8);
  REQUIRE(c);
  return c->curve.regime(bytes).bandwidth * 2.0 * 7 / 8;
}

std::string source_of(const GpuSpec& g, const std::string& part)
{
  for (const auto& [p, s] : timing_sources(g))
    if (p == part)
      return s;
  return "";
}

} // namespace

TEST_CASE("an_h200_takes_the_h100s_nccl_curves_and_meets_its_published_ring_bandwidth_within_5_percent",
          "[timing][collectives][validation]")
{
  GpuSpec h100 = gpu_preset("h100-sxm-80gb"), h200 = gpu_preset("h200-sxm-141gb");
  // The same NVLink 4 baseboard: the H100's measured curves, bandwidth x 450/450.
  CollectiveTiming a = nvlink_collective_timing(h100, CollectiveKind::all_reduce, 8, 1 << 30, 1e-6);
  CollectiveTiming b = nvlink_collective_timing(h200, CollectiveKind::all_reduce, 8, 1 << 30, 1e-6);
  CHECK(b.flow_scale == a.flow_scale);
  CHECK(b.delay_s == a.delay_s);
  CHECK(a.flow_scale > 1); // NCCL below line rate: no longer the H200's line rate
  // Published (ml-engineering all_reduce_bench on 8 x H200, 16 GiB, NCCL_NVLS_ENABLE=0,
  // calibration/data/published_microbenchmarks.csv): ring all-reduce 367.6 GB/s bus bandwidth.
  double busbw = all_reduce_busbw(h200, 16.0 * (1 << 30));
  INFO("derived H200 all-reduce bus bandwidth " << busbw / 1e9 << " GB/s");
  CHECK(busbw == Approx(367.6e9).epsilon(0.05));
  CHECK(source_of(h200, "nvlink_collectives") == "derived from h100-sxm-80gb");
  CHECK(source_of(h200, "gemm") == "measured (held under a 700 W limit)"); // its own fit stays, at its limit
}

TEST_CASE("an_h800_takes_the_h100s_curves_scaled_by_its_nvlink_and_meets_deepseeks_160_gbs_within_6_percent",
          "[timing][collectives][validation]")
{
  GpuSpec h100 = gpu_preset("h100-sxm-80gb"), h800 = gpu_preset("h800-sxm-80gb");
  double big = 1e9;
  // Every bandwidth x 200/450 (eight NVLink 4 links of the H100's eighteen), latency kept.
  CHECK(all_reduce_busbw(h800, big) == Approx(all_reduce_busbw(h100, big) * 200.0 / 450));
  CHECK(h800.profile->collective("all_reduce", 8, 8)->curve.regime(big).latency_s ==
        h100.profile->collective("all_reduce", 8, 8)->curve.regime(big).latency_s);
  // DeepSeek-V3 technical report, section 3.2.2: 160 GB/s of NVLink usable on the H800.
  CHECK(all_reduce_busbw(h800, big) == Approx(160e9).epsilon(0.06));
  // Its kernels stay the catalog's estimates: only the collectives were taken.
  CHECK(source_of(h800, "gemm") == "estimated");
  CHECK(source_of(h800, "nvlink_collectives") == "derived from h100-sxm-80gb");
  CHECK(h800.profile->gemm.empty());
}

TEST_CASE("timing_sources_name_measured_derived_estimated_and_none_per_part", "[timing]")
{
  // The H100's GEMMs are held back by its 700 W limit (PowerGovernor), the B200's are not
  // (no fitted draw): the summary says which.
  GpuSpec h100 = gpu_preset("h100-sxm-80gb");
  for (const auto& [part, source] : timing_sources(h100))
    CHECK(source == (part == "gemm" ? "measured (held under a 700 W limit)" : "measured"));
  for (const auto& [part, source] : timing_sources(gpu_preset("b200")))
    CHECK(source == "estimated");
  // The A100 40GB profile scales the 80GB's fit whole (STREAM ratio).
  for (const auto& [part, source] : timing_sources(gpu_preset("a100-sxm4-40gb")))
    if (part != "host_copies") // no copy curves in either A100 fit
      CHECK(source == "derived from a100-sxm4-80gb");
  CHECK(source_of(gpu_preset("rtx-4090"), "nvlink_collectives") == "none");
  // A run names them in its results; `hardware.profile: none` makes every part estimated.
  nlohmann::json fitted = run_json("timing-h100", "hardware: {node: dgx-h100, gpus_per_node: 2}\nmodel: {preset: "
                                                  "gpt2}\ntraining: {seq_len: 256, global_batch: 4, dp: 2}\n");
  CHECK(fitted["hardware_profile"]["timing"]["gemm"] == "measured (held under a 700 W limit)");
  CHECK(fitted["hardware_profile"]["timing"]["nvlink_collectives"] == "measured");
  nlohmann::json none = run_json("timing-none", "hardware: {node: dgx-h100, gpus_per_node: 2, profile: none}\nmodel: "
                                                "{preset: gpt2}\ntraining: {seq_len: 256, global_batch: 4, dp: 2}\n");
  for (const auto& [part, source] : none["hardware_profile"]["timing"].items())
    CHECK(source == (part == "gemm" ? "estimated (held under a 700 W limit)" : "estimated"));
}

TEST_CASE("an_inline_gpu_takes_collectives_from_a_measured_one_and_bad_sources_are_refused", "[timing][errors]")
{
  const std::string job = "model: {preset: gpt2}\ntraining: {seq_len: 256, global_batch: 2}\n";
  // A B200 given the H100's curves: every bandwidth x 900/450.
  ExperimentSpec b200 =
      parse_spec("hardware:\n  node: hgx-b200\n  gpus_per_node: 1\n  gpu: {preset: b200, collectives_from: "
                 "h100-sxm-80gb}\n" +
                     job,
                 "b200.yaml", "");
  const GpuSpec& g = b200.cluster.node.gpu;
  CHECK(all_reduce_busbw(g, 1e9) == Approx(2 * all_reduce_busbw(gpu_preset("h100-sxm-80gb"), 1e9)));
  CHECK(source_of(g, "nvlink_collectives") == "derived from h100-sxm-80gb");
  CHECK(source_of(g, "gemm") == "estimated");

  // An H200 given another NVLink bandwidth inline takes the H100's curves again at it:
  // 900 GB/s per direction, twice the bus bandwidth of the catalog's H200.
  ExperimentSpec wide = parse_spec("hardware:\n  node: hgx-h200\n  gpus_per_node: 1\n  gpu: {preset: h200-sxm-141gb, "
                                   "nvlink_bw: 900e9}\n" +
                                       job,
                                   "wide.yaml", "");
  CHECK(all_reduce_busbw(wide.cluster.node.gpu, 1e9) ==
        Approx(2 * all_reduce_busbw(gpu_preset("h200-sxm-141gb"), 1e9)));

  auto refusal = [&](const std::string& gpu) {
    return refused("collectives-from", "hardware:\n  node: dgx-h100\n  gpus_per_node: 1\n  gpu: " + gpu + "\n" + job);
  };
  CHECK_THAT(refusal("{preset: h100-sxm-80gb, collectives_from: h200-sxm-141gb}"),
             Catch::Contains("would change nothing") && Catch::Contains("collectives_from"));
  CHECK_THAT(refusal("{preset: b200, collectives_from: h200-sxm-141gb}"),
             Catch::Contains("takes its own collectives from h100-sxm-80gb"));
  CHECK_THAT(refusal("{preset: b200, collectives_from: h100-sxm-8gb}"),
             Catch::Contains("'h100-sxm-8gb' is not a catalog GPU") && Catch::Contains("h100-sxm-80gb"));
  CHECK_THAT(refusal("{preset: b200, collectives_from: rtx-4090}"), Catch::Contains("has no NVLink"));
  CHECK_THAT(refusal("{preset: b200, collectives_from: b200}"), Catch::Contains("has no measured collectives"));
}

TEST_CASE("a_users_measured_collectives_replace_the_derived_ones_whole", "[timing][profile]")
{
  GpuSpec h200 = gpu_preset("h200-sxm-141gb");
  GpuProfile mine;
  mine.gpu  = "h200-sxm-141gb";
  mine.name = "mine.yaml";
  CollectiveCurve c{"all_reduce", 8, 8, {}};
  c.curve.regimes.push_back({std::numeric_limits<double>::infinity(), 30e-6, 200e9});
  mine.collectives.push_back(c);
  GpuProfile p = overlay_profile(*h200.profile, mine);
  CHECK(p.collectives_from.empty());
  REQUIRE(p.collectives.size() == 1); // the H100's other curves (2 and 4 ranks, sends) gone with it
  CHECK(p.collectives[0].curve.regimes[0].bandwidth == 200e9);
  h200.profile = std::make_shared<GpuProfile>(p);
  CHECK(source_of(h200, "nvlink_collectives") == "measured");
}

TEST_CASE("a_sweep_over_machines_names_each_ones_timing_sources_and_warns_where_estimates_meet_measurements",
          "[timing][sweep][cli]")
{
  auto report = [](const std::string& name, const std::string& nodes) {
    std::string spec = temp_path(name + ".yaml"), out = temp_path(name + ".h5");
    write_file(spec, "spec:\n  hardware: {node: dgx-h100, gpus_per_node: 2}\n  model: {preset: gpt2}\n"
                     "  training: {seq_len: 256, global_batch: 4, micro_batch: 1, dp: 2}\ngrid:\n  hardware.node: " +
                         nodes + "\n");
    CliResult s = run_cli("sweep " + spec + " -o " + out + " -j 1");
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    CliResult r = run_cli("report " + out);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  std::string mixed = report("timing-mixed", "[dgx-h100, hgx-h200, hgx-b200]");
  CHECK_THAT(mixed, Catch::Contains("timed by part") && Catch::Contains("h100-sxm-80gb") &&
                        Catch::Contains("derived from h100-sxm-80gb"));
  CHECK_THAT(mixed, Catch::Contains("warning: GEMMs, memory-bound kernels, host copies, NVLink collectives are "
                                    "measured on some machines and estimated on others"));
  // The H200's collectives derived from the H100's measurement: the same footing.
  std::string equal = report("timing-equal", "[dgx-h100, hgx-h200]");
  CHECK_THAT(equal, Catch::Contains("every part is timed on the same footing"));
  CHECK_THAT(equal, !Catch::Contains("warning:"));
}

TEST_CASE("a_profile_scaled_to_a_changed_gpu_stands_as_measured_and_an_estimated_part_is_not_called_scaled",
          "[timing][profile]")
{
  // An H100 with a changed HBM bandwidth is still timed from its measurements, scaled:
  // beside an estimated GPU the comparison warns as for a measured one (it once counted
  // "measured (scaled: ...)" as neither and dropped GEMMs and memory-bound kernels from the
  // warning).
  MachineTiming scaled{"h100 scaled",
                       {"measured (scaled: HBM x0.90)", "measured (scaled: HBM x0.90)", "measured", "measured"}};
  MachineTiming estimated{"b200", {"estimated", "estimated", "estimated", "estimated"}};
  CHECK_THAT(timing_comparison_text({scaled, estimated}),
             Catch::Contains("warning: GEMMs, memory-bound kernels, host copies, NVLink collectives are measured on "
                             "some machines and estimated on others"));
  // The H800's profile holds collectives only: a new bandwidth scales nothing it times,
  // and its estimated parts stay "estimated".
  std::string spec = "hardware: {node: hgx-h800, gpus_per_node: 1, gpu: {hbm_peak_bw: 1.6e12}}\n"
                     "model: {preset: gpt2}\ntraining: {seq_len: 256, global_batch: 1, micro_batch: 1}\n";
  GpuSpec g        = parse_spec(spec, "test.yaml", "").cluster.node.gpu;
  for (const auto& [part, source] : timing_sources(g))
    if (part == "gemm" || part == "memory_bound") {
      INFO(part);
      CHECK(source == "estimated");
    }
}

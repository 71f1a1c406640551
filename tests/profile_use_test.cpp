// A user's own profile in a spec (hardware.profile): laid over the GPU's shipped one,
// found beside the spec, and named in every output.
#include "calibration/Measurement.hpp"
#include "calibration/fit/ProfileFit.hpp"
#include "hwmodels/Catalog.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace memwall;
using namespace memwall::test;

namespace {

// A profile of the H100 that measured pinned host-to-device copies only: 10 us + bytes /
// 20 GB/s (a host on a narrower link than the shipped measurement's).
GpuProfile h2d_only()
{
  std::vector<Measurement> rows;
  for (double b = 1 << 20; b <= 1 << 30; b *= 4) {
    Measurement m;
    m.gpu = "h100-sxm-80gb", m.benchmark = "h2d_pinned", m.bytes = b, m.time_s = 10e-6 + b / 20e9;
    rows.push_back(m);
  }
  GpuProfile p = fit_profile(rows, gpu_preset("h100-sxm-80gb"), "test");
  p.name       = "mine.yaml";
  return p;
}

// A folder with a spec naming its profile relatively: `dir`/spec.yaml and `dir`/mine.yaml.
std::string spec_beside_profile(const std::string& dir)
{
  std::filesystem::create_directories(dir);
  write_file(dir + "/mine.yaml", profile_yaml(h2d_only()));
  write_file(dir + "/spec.yaml", "hardware: {node: dgx-h100, gpus_per_node: 1, profile: mine.yaml}\n"
                                 "model: {preset: gpt2}\n"
                                 "training: {seq_len: 256, global_batch: 2, micro_batch: 1}\n");
  return dir + "/spec.yaml";
}

} // namespace

TEST_CASE("a_users_profile_replaces_only_what_it_measured", "[calibration][profile]")
{
  const GpuProfile& shipped = *gpu_preset("h100-sxm-80gb").profile;
  GpuProfile p              = overlay_profile(shipped, h2d_only());
  // Its h2d curve: 1 GiB in 10 us + 1 GiB / 20 GB/s.
  CHECK(p.copies.at("h2d_pinned").time(1 << 30) == Approx(10e-6 + (1 << 30) / 20e9).epsilon(1e-6));
  // The shipped rest: NCCL curves, GEMM tables, the other copies.
  CHECK(p.collectives.size() == shipped.collectives.size());
  CHECK(p.gemm_tables.size() == shipped.gemm_tables.size());
  CHECK(p.copies.at("d2h_pinned").time(1 << 30) == shipped.copies.at("d2h_pinned").time(1 << 30));
  CHECK(p.parts.find("h2d_pinned from mine.yaml") == 0);
  CHECK(p.parts.find("from catalog h100-sxm-80gb") != std::string::npos);
}

TEST_CASE("a_gemm_dtype_a_user_measured_replaces_the_shipped_tables_of_that_dtype", "[calibration][profile]")
{
  // A user's bf16 model without tables: the shipped bf16 tables and pass models go (they
  // were corrections of another fit), the shipped fp8 model stays.
  const GpuProfile& shipped = *gpu_preset("h100-sxm-80gb").profile;
  GpuProfile mine;
  mine.gpu = "h100-sxm-80gb", mine.name = "mine.yaml";
  mine.gemm[Dtype::bf16]            = shipped.gemm.at(Dtype::bf16);
  mine.gemm[Dtype::bf16].efficiency = 0.5;
  GpuProfile p                      = overlay_profile(shipped, mine);
  CHECK(p.gemm.at(Dtype::bf16).efficiency == 0.5);
  CHECK(p.gemm_tables.count({Dtype::bf16, GemmPass::forward}) == 0);
  CHECK(p.gemm_passes.count({Dtype::bf16, GemmPass::forward}) == 0);
  CHECK(p.gemm.count(Dtype::fp8) == 1);
}

TEST_CASE("a_specs_profile_is_found_beside_the_spec_and_named_in_its_outputs", "[calibration][profile]")
{
  // Run from the test's working folder, not the spec's: the relative path still resolves.
  std::string spec = spec_beside_profile(temp_path("profile-beside"));
  CliResult r      = run_cli("run " + spec + " --json");
  REQUIRE(r.exit_code == 0);
  nlohmann::json out = nlohmann::json::parse(r.out);
  CHECK(out["hardware_profile"]["name"] == temp_path("profile-beside") + "/mine.yaml");
  CHECK(out["hardware_profile"]["parts"].get<std::string>().find("from catalog h100-sxm-80gb") != std::string::npos);
  std::string h5 = temp_path("profile-run.h5");
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  CliResult report = run_cli("report " + h5);
  CHECK(report.out.find("profile " + temp_path("profile-beside") + "/mine.yaml (") != std::string::npos);
  // A catalog GPU without a shipped profile says so.
  nlohmann::json est = run_json("profile-none", small_training_spec, "");
  CHECK(est["hardware_profile"]["name"] == "none");
}

TEST_CASE("a_missing_profile_file_is_one_line_naming_the_key", "[calibration][profile]")
{
  std::string err = refused("profile-missing", "hardware: {node: dgx-h100, gpus_per_node: 1, profile: nowhere.yaml}\n"
                                               "model: {preset: gpt2}\n"
                                               "training: {seq_len: 256, global_batch: 2, micro_batch: 1}\n");
  CHECK(err.find("hardware.profile") != std::string::npos);
  CHECK(err.find("nowhere.yaml") != std::string::npos);
}

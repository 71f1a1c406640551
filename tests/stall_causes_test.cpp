// Each stall split by what it waited for and in which phase, with what would remove it
// (StepReport's `stalls`), so that "offload stall 2.2 s" says CPU Adam or copies.
#include "analysis/StepReport.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

OpRecord rec(OpKind kind, StreamKind stream, DeviceRef dev, StepPhase phase, double start, double end,
             bool pageable = false)
{
  OpRecord r;
  r.name     = "op";
  r.kind     = kind;
  r.stream   = stream;
  r.device   = dev;
  r.phase    = phase;
  r.start    = start;
  r.end      = end;
  r.pageable = pageable;
  return r;
}

double part(const nlohmann::ordered_json& stalls, const std::string& cause, const std::string& phase)
{
  for (const auto& s : stalls)
    if (s["cause"] == cause && s["phase"] == phase)
      return s["seconds"].get<double>();
  return 0;
}

} // namespace

TEST_CASE("an_offload_stall_is_split_by_its_causes_in_the_order_they_hold_the_gpu", "[outputs][stalls]")
{
  // By hand: the GPU computes over [0, 1]; the host's CPU Adam runs over [1, 3], a pageable
  // host-to-device copy over [2.5, 4]. The GPU is stalled over [1, 4], 3 s: 2 s on the CPU
  // step, the copy's 1 s past it ([3, 4]); the overlap [2.5, 3] counts once, for the CPU.
  RunResult r;
  DeviceRef gpu{}, host{};
  host.kind = DeviceKind::host;
  PoolResult pool;
  pool.device = gpu;
  r.pools.push_back(pool);
  r.makespan_s = 4;
  r.ops.push_back(rec(OpKind::kernel, StreamKind::compute, gpu, StepPhase::backward, 0, 1));
  r.ops.push_back(rec(OpKind::host_compute, StreamKind::host, host, StepPhase::optimizer, 1, 3));
  r.ops.push_back(rec(OpKind::copy, StreamKind::h2d, gpu, StepPhase::optimizer, 2.5, 4, true));
  auto j = report_json(r);
  CHECK(j["breakdown_s"]["offload_stall"].get<double>() == Approx(3.0));
  REQUIRE(j["stalls"].size() == 2);
  CHECK(j["stalls"][0]["cause"] == "cpu_optimizer_step");
  CHECK(part(j["stalls"], "cpu_optimizer_step", "optimizer") == Approx(2.0));
  CHECK(part(j["stalls"], "h2d_pageable_copies", "optimizer") == Approx(1.0));
  CHECK_THAT(j["stalls"][1]["remedy"].get<std::string>(), Catch::Contains("training.offload.pinned: true"));
}

TEST_CASE("zero_offloads_stall_parts_add_up_and_pinned_buffers_remove_the_pageable_ones", "[outputs][stalls]")
{
  // ZeRO-Offload of Llama-2-13B on a DGX H100 with pageable buffers (DeepSpeed's default):
  // the parts add up to the offload stall; pinned buffers leave no pageable part, and
  // the text stops suggesting them.
  std::string spec = source_path("examples/llama2-13b-zero-offload-4x4090.yaml") +
                     " --set hardware.node=dgx-h100 --set hardware.gpus_per_node=8 --set training.global_batch=16";
  for (bool pinned : {false, true}) {
    std::string set = pinned ? " --set training.offload.pinned=true" : "";
    auto j          = nlohmann::json::parse(run_cli("run " + spec + set + " --json").out);
    double sum = 0, pageable = 0;
    for (const auto& s : j["stalls"]) {
      CHECK(s["stall"] == "offload");
      sum += s["seconds"].get<double>();
      if (s["cause"].get<std::string>().find("pageable") != std::string::npos)
        pageable += s["seconds"].get<double>();
    }
    CHECK(sum == Approx(j["breakdown_s"]["offload_stall"].get<double>()).epsilon(1e-9));
    CHECK(part(j["stalls"], "cpu_optimizer_step", "optimizer") > 0);
    CHECK((pageable > 0) == !pinned);
    std::string text = run_cli("run " + spec + set).out;
    CHECK_THAT(text, Catch::Contains("stalled on"));
    CHECK((text.find("pin the host buffers") != std::string::npos) == !pinned);
  }
}

TEST_CASE("a_paging_stall_is_split_by_the_phase_that_waited", "[outputs][stalls][paging]")
{
  // Llama-2-7B with Adam on one H100 under unified memory: 110 GiB of demand on an 80 GiB
  // GPU. The phases' parts add up to the paging stall, and the optimizer's is among them.
  std::string spec = temp_path("paged_7b.yaml");
  write_file(spec, "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: llama-2-7b}\n"
                   "training: {seq_len: 2048, global_batch: 8, micro_batch: 1}\nmemory: {mode: unified}\n");
  auto j     = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  double sum = 0;
  for (const auto& s : j["stalls"])
    if (s["stall"] == "paging")
      sum += s["seconds"].get<double>();
  CHECK(sum == Approx(j["breakdown_s"]["paging_stall"].get<double>()).epsilon(1e-9));
  CHECK(part(j["stalls"], "faults", "optimizer") > 0);
  CHECK(part(j["stalls"], "faults", "backward") > 0);
}

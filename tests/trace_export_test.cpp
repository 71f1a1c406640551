// `memwall export`: a training step written as PyTorch profiler traces and read back
// with workload.trace is the same DAG, so the same replay; what cannot be exported, and
// an exported file damaged by hand, are refused with one line.
#include "analysis/StepReport.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace memwall;
using memwall::test::refused;
using memwall::test::source_path;
using memwall::test::temp_path;
using memwall::test::write_file;

TEST_CASE("an_exported_step_replays_from_its_trace_to_the_same_step_time_and_peak_memory", "[trace][export]")
{
  // `memwall export` writes the step's ops (one file per GPU that runs them) with every
  // field, id and dependency; read back with workload.trace they are the same DAG, so
  // the replay is the same: one GPU, data parallelism, ZeRO offload to the CPU (copies,
  // host Adam), ZeRO-3 across 4 DGX H100 (collectives, folded ranks), 64 GPUs over 8
  // nodes, an inline node, and tp 8 x pp 8 interleaved (pipeline sends, 8 files).
  for (const std::string example :
       {"gpt2-1gpu-a100", "gpt2-xl-dp8-dgx-a100", "llama2-13b-zero-offload-4x4090", "llama2-70b-zero3-4xdgx-h100",
        "llama2-7b-dp64-8xdgx-h100", "inline-node-4x-l40s", "gpt3-175b-tp8-pp8-interleaved-8xdgx-a100"}) {
    INFO(example);
    std::string spec = source_path("examples/" + example + ".yaml");
    std::string out  = temp_path("export_" + example + ".json.gz");
    auto cli         = memwall::test::run_cli("export " + spec + " -o " + out);
    REQUIRE(cli.exit_code == 0);
    std::vector<std::string> files;
    for (size_t a = 0, b; (b = cli.out.find('\n', a)) != std::string::npos; a = b + 1)
      files.push_back(cli.out.substr(a, b - a));
    REQUIRE(!files.empty());
    // Every file is NAME.rankR: the glob the README gives finds one GPU's file too.
    for (size_t i = 0; i < files.size(); ++i)
      CHECK(files[i] == out.substr(0, out.size() - 8) + ".rank" + std::to_string(i) + ".json.gz");
    // The same hardware section, the exported files as the workload.
    std::string hardware  = memwall::test::read_file(spec);
    nlohmann::json direct = report_json(simulate(load_spec(spec), /*in_child=*/true, {}));
    std::string reimport  = temp_path("reimport_" + example + ".yaml");
    std::string list;
    for (const std::string& f : files)
      list += (list.empty() ? "" : ", ") + f;
    ExperimentSpec original = load_spec(spec);
    write_file(reimport, "hardware:\n" +
                             hardware.substr(hardware.find("hardware:") + 9,
                                             hardware.find("\nmodel:") - hardware.find("hardware:") - 9) +
                             "\nworkload: {trace: [" + list + "]}\n");
    nlohmann::json again = report_json(simulate(load_spec(reimport), /*in_child=*/true, {}));
    CHECK(again["step_time_s"].get<double>() == Approx(direct["step_time_s"].get<double>()).epsilon(1e-9));
    CHECK(again["max_peak_bytes"].get<double>() == Approx(direct["max_peak_bytes"].get<double>()).epsilon(1e-9));
    CHECK(again["mfu"].get<double>() == Approx(direct["mfu"].get<double>()).epsilon(1e-9));
  }
}

TEST_CASE("export_refuses_what_it_cannot_write_with_one_line", "[trace][export][errors]")
{
  auto refused_export = [](const std::string& name, const std::string& yaml, const std::string& out) {
    std::string spec = temp_path(name + ".yaml");
    write_file(spec, yaml);
    auto r = memwall::test::run_cli("export " + spec + " -o " + temp_path(out));
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(temp_path(out)));
    return r.err;
  };
  CHECK_THAT(refused_export("export_serving", memwall::test::small_serving_spec, "serve.json.gz"),
             Catch::Contains("a serving run makes its ops as it runs"));
  CHECK_THAT(refused_export("export_not_json", memwall::test::small_training_spec, "step.h5"),
             Catch::Contains("name the output .json or .json.gz"));
  CHECK_THAT(refused_export("export_unified", memwall::test::small_training_spec + "memory: {mode: unified}\n",
                            "unified.json"),
             Catch::Contains("not exported (yet)"));
}

TEST_CASE("an_exported_trace_with_a_broken_op_is_refused_naming_the_op", "[trace][export][errors]")
{
  const std::string hw = "hardware: {node: dgx-a100, gpus_per_node: 1}\n";
  auto trace           = [](const std::string& ops) {
    return R"({"memwall": {"version": 1, "groups": [], "represents": [], "shadows": []}, "traceEvents": [)" + ops +
           "]}";
  };
  // (Each field given once: a key given twice is refused before the op is read.)
  auto kernel = [](int id, const std::string& extra, const std::string& kclass = "\"gemm\"",
                   const std::string& device = R"(["gpu", 0, 0])", const std::string& flops = "1e9") {
    return R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1, "args": {"device": 0, "stream": 0,
               "memwall": {"id": )" +
           std::to_string(id) + R"(, "kind": "kernel", "stream": "compute", "phase": "forward", "device": )" + device +
           R"(, "kclass": )" + kclass + R"(, "dtype": "bf16", "flops": )" + flops + extra + "}}}";
  };
  struct Bad {
    std::string name, events, says;
  };
  for (const Bad& b : std::vector<Bad>{
           {"dep_forward", kernel(0, R"(, "deps": [1])") + "," + kernel(1, ""),
            "op 0: args.memwall.deps lists ids of earlier ops"},
           {"id_gap", kernel(0, "") + "," + kernel(2, ""), "op 2: ids must run 0, 1, 2"},
           {"bad_enum", kernel(0, "", "\"matmul\""), "kclass 'matmul' is not one of gemm, attention"},
           {"off_cluster", kernel(0, "", "\"gemm\"", R"(["gpu", 3, 0])"), "device node3.gpu0 is not in the cluster"},
           {"negative", kernel(0, "", "\"gemm\"", R"(["gpu", 0, 0])", "-5"),
            "args.memwall.flops must be a finite number >= 0"},
           {"twice", kernel(0, R"(, "flops": 2e9)"), "traceEvents[0]: key 'flops' given twice in one object"},
       }) {
    INFO(b.name);
    std::string f = temp_path("exported_" + b.name + ".json");
    write_file(f, trace(b.events));
    CHECK_THAT(refused("exported_" + b.name, hw + "workload: {trace: " + f + "}\n"), Catch::Contains(b.says));
  }
}

TEST_CASE("a_replayed_trace_says_its_window_its_profiler_steps_ranks_and_missing_memory", "[trace][outputs]")
{
  // The V100 traces hold 5 of torch.profiler's steps (ProfilerStep#2..6 and #101..105);
  // the two-rank one replays on 2 GPUs, whatever the node holds; the one-rank one has no
  // allocator events, which is said instead of a 0.00 GiB peak that "fits".
  std::string two = temp_path("trace_two.yaml"), one = temp_path("trace_one.yaml");
  write_file(two, "hardware: {node: dgx-h100}\nworkload: {trace: " +
                      source_path("tests/data/traces/v100-2rank-with-memory.json.gz") + "}\n");
  write_file(one, "hardware: {node: dgx-h100}\nworkload: {trace: " +
                      source_path("tests/data/traces/v100-1rank.json.gz") + "}\n");
  auto j = nlohmann::json::parse(memwall::test::run_cli("run " + two + " --json").out);
  CHECK(j["trace"]["profiler_steps"] == 5);
  CHECK(j["trace"]["ranks"] == 2);
  CHECK(j["trace"]["memory_recorded"] == true);
  // Energy of the 2 GPUs that replay: their share of the DGX H100's 10.2 kW (datasheet),
  // 10,200 / 8 x 2 x PUE 1.56; their TDP alone 700 W x 2 x 1.56.
  CHECK(j["energy"]["power_w"].get<double>() == Approx(10200.0 / 8 * 2 * 1.56));
  CHECK(j["energy"]["gpu_power_w"].get<double>() == Approx(2184.0));
  std::string text = memwall::test::run_cli("run " + two).out;
  CHECK_THAT(text, Catch::Contains("trace window") && Catch::Contains("5 profiler steps") &&
                       Catch::Contains("2 replayed") && !Catch::Contains("8 of 8"));
  // The parts of the window add up to it: compute, exposed comm, host, copies, idle.
  const auto& b = j["breakdown_s"];
  double busy   = b["compute"].get<double>() + b["exposed_comm"].get<double>() + b["host_overhead"].get<double>() +
                b["offload_stall"].get<double>() + b["paging_stall"].get<double>();
  CHECK(busy <= j["step_time_s"].get<double>() * (1 + 1e-12));
  CHECK(busy > 0.9 * j["step_time_s"].get<double>()); // the host's gaps are what the split missed
  std::string bare = memwall::test::run_cli("run " + one).out;
  CHECK_THAT(bare, Catch::Contains("memory         not in the trace") && !Catch::Contains("0.00 GiB of"));
}

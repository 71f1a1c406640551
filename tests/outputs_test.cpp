// What `memwall run` and `memwall list` give a user: the JSON contract, determinism,
// HDF5 and trace files, and every shipped example running.
#include "tests/TestHelpers.hpp"

#include <H5Cpp.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace memwall::test;
using nlohmann::json;

namespace {
const std::string demo = source_path("examples/gpt2-1gpu-a100.yaml");
}

TEST_CASE("the_same_spec_gives_byte_identical_json_twice", "[outputs]")
{
  CliResult a = run_cli("run " + demo + " --json");
  CliResult b = run_cli("run " + demo + " --json");
  REQUIRE(a.exit_code == 0);
  CHECK(!a.out.empty());
  CHECK(a.out == b.out);
}

TEST_CASE("json_output_carries_the_contracted_keys", "[outputs]")
{
  CliResult r = run_cli("run " + demo + " --json");
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  for (const char* key : {"step_time_s", "tokens_per_s", "model_flops_per_step", "mfu", "fits", "max_peak_bytes",
                          "devices", "links", "breakdown_s"})
    CHECK(j.contains(key));
  const json& d = j["devices"].at(0);
  for (const char* key :
       {"name", "kind", "count", "capacity_bytes", "peak_bytes", "peak_by_category", "max_by_category", "oom"})
    CHECK(d.contains(key));
  for (const char* cat :
       {"weights", "gradients", "optimizer", "activations", "kv_cache", "workspace", "context", "other"})
    CHECK(d["peak_by_category"].contains(cat));
  for (const char* key : {"compute", "exposed_comm", "pipeline_bubble", "offload_stall", "paging_stall"})
    CHECK(j["breakdown_s"].contains(key));
  for (const char* key : {"name", "bytes", "busy_s", "utilization"})
    CHECK(j["links"].at(0).contains(key));
  // Throughput is tokens per step over step time: 32 sequences of 1024 tokens.
  CHECK(j["tokens_per_s"].get<double>() == Approx(32.0 * 1024 / j["step_time_s"].get<double>()).epsilon(1e-12));
  // The composition at the peak adds up to the peak.
  double sum = 0;
  for (auto& [k, v] : d["peak_by_category"].items())
    sum += v.get<double>();
  CHECK(sum == Approx(d["peak_bytes"].get<double>()).epsilon(1e-12));
}

TEST_CASE("the_breakdown_of_a_zero_offload_step_counts_the_gpu_waiting_for_the_host_optimizer", "[outputs]")
{
  // ZeRO-Offload of Llama-2-13B on four RTX 4090s: after the backward pass the GPUs hold
  // nothing to do while the CPU runs Adam over 13e9 parameters. With one GPU per replica
  // and no pipeline, every instant of the step is compute, exposed communication or an
  // offload stall (copies or the host's optimizer step); nothing is left unexplained.
  CliResult r = run_cli("run " + source_path("examples/llama2-13b-zero-offload-4x4090.yaml") + " --json");
  REQUIRE(r.exit_code == 0);
  json j        = json::parse(r.out);
  const json& b = j["breakdown_s"];
  double sum    = b["compute"].get<double>() + b["exposed_comm"].get<double>() + b["pipeline_bubble"].get<double>() +
               b["offload_stall"].get<double>();
  CHECK(sum == Approx(j["step_time_s"].get<double>()).epsilon(1e-9));
  // The host step is most of the stall: more than a quarter of the step.
  CHECK(b["offload_stall"].get<double>() > 0.25 * j["step_time_s"].get<double>());
}

TEST_CASE("an_oom_is_a_result_with_the_op_device_requested_and_free_bytes", "[outputs]")
{
  // Llama-2-7B with plain Adam needs 16 B x 6.74e9 = 108 GB of model states; a 24 GB
  // RTX 4090 runs out at the first large allocation.
  std::string spec = temp_path("oom.yaml");
  write_file(spec, "hardware: {node: workstation-4x4090, gpus_per_node: 1}\nmodel: {preset: llama-2-7b}\n"
                   "training: {seq_len: 1024, global_batch: 1, micro_batch: 1}\n");
  CliResult r = run_cli("run " + spec + " --json");
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  CHECK(j["fits"] == false);
  const json& oom = j["devices"].at(0)["oom"];
  CHECK(oom["op"].get<std::string>().find("L") == 0);
  CHECK(oom["requested_bytes"].get<double>() > oom["free_bytes"].get<double>());
  CHECK(j["max_peak_bytes"].get<double>() > 108e9);
}

TEST_CASE("set_overrides_a_spec_key_from_the_command_line", "[outputs]")
{
  json base       = json::parse(run_cli("run " + demo + " --json").out);
  json more       = json::parse(run_cli("run " + demo + " --json --set training.micro_batch=16").out);
  double act_base = base["devices"][0]["max_by_category"]["activations"];
  double act_more = more["devices"][0]["max_by_category"]["activations"];
  CHECK(act_more == Approx(2 * act_base).epsilon(0.01)); // twice the sequences per pass
}

TEST_CASE("hdf5_output_holds_provenance_ops_and_memory_timelines", "[outputs]")
{
  std::string h5 = temp_path("run.h5");
  CliResult r    = run_cli("run " + demo + " -o " + h5 + " --ops all");
  REQUIRE(r.exit_code == 0);
  H5::H5File f(h5, H5F_ACC_RDONLY);
  H5::Group root = f.openGroup("/");
  for (const char* a : {"format", "memwall_version", "git_commit", "spec_text", "summary_json"})
    CHECK(root.attrExists(a));
  H5::DataSet start = f.openDataSet("/ops/start_s");
  H5::DataSet name  = f.openDataSet("/ops/name");
  hsize_t n = 0, m = 0;
  start.getSpace().getSimpleExtentDims(&n);
  name.getSpace().getSimpleExtentDims(&m);
  CHECK(n > 100);
  CHECK(n == m);
  CHECK(f.nameExists("/memory/node0.gpu0/total_bytes"));
  CHECK(f.nameExists("/links/busy_s"));
}

TEST_CASE("trace_output_is_chrome_trace_json_with_streams_and_memory_counters", "[outputs]")
{
  std::string path = temp_path("trace.json");
  REQUIRE(run_cli("run " + demo + " --trace " + path).exit_code == 0);
  std::ifstream in(path);
  json t      = json::parse(in);
  bool kernel = false, counter = false, thread_name = false;
  for (const auto& e : t["traceEvents"]) {
    kernel      = kernel || (e["ph"] == "X" && e["cat"] == "kernel");
    counter     = counter || (e["ph"] == "C" && e["name"] == "memory (GiB)");
    thread_name = thread_name || (e["ph"] == "M" && e["name"] == "thread_name");
  }
  CHECK(kernel);
  CHECK(counter);
  CHECK(thread_name);
}

TEST_CASE("every_example_spec_runs_and_fits_its_hardware", "[outputs]")
{
  // The examples show configurations that work; one that stopped fitting after a model
  // change would mislead its readers. An example of a question `memwall advise` answers
  // says so on a line `# fits: no`, and must still not fit.
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    if (entry.path().extension() != ".yaml")
      continue;
    INFO(entry.path());
    std::string extra;
#ifdef MEMWALL_SANITIZED
    // Under ASan in a Debug build the 512 micro-batches of the 1T example take many
    // minutes; 64 exercise the same code.
    if (entry.path().filename().string().find("megatron-1t") != std::string::npos)
      extra = " --set training.global_batch=384";
    std::ifstream spec_text(entry.path());
    std::string text((std::istreambuf_iterator<char>(spec_text)), std::istreambuf_iterator<char>());
    if (text.find("poisson:") != std::string::npos) // serving examples: fewer requests, same code
      extra = " --set inference.poisson.requests=40";
#endif
    std::string example = read_file(entry.path().string());
    bool question       = example.find("\n# fits: no\n") != std::string::npos;
    CliResult r           = run_cli("run " + entry.path().string() + " --json" + extra);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.out)["fits"] == !question);
  }
}

TEST_CASE("list_prints_the_catalog_presets_and_every_parameter", "[outputs]")
{
  CliResult gpus = run_cli("list gpus");
  for (const char* id : {"v100-sxm2-32gb", "t4", "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm-80gb",
                         "h100-pcie-80gb", "h200-sxm-141gb", "b200", "mi300x", "rtx-4070", "rtx-4090", "l40s"})
    CHECK_THAT(gpus.out, Catch::Contains(id));
  CliResult nodes = run_cli("list nodes");
  for (const char* id : {"dgx-a100", "dgx-h100", "hgx-h200", "workstation-4x4090", "desktop-4070", "cloud-t4"})
    CHECK_THAT(nodes.out, Catch::Contains(id));
  CHECK_THAT(run_cli("list models").out, Catch::Contains("llama-3-405b"));
  CliResult params = run_cli("list params");
  CHECK_THAT(params.out,
             Catch::Contains("training.micro_batch") && Catch::Contains("hardware.network.oversubscription"));
}

TEST_CASE("a_serving_run_writes_json_keys_and_per_request_hdf5_records_identically_twice", "[outputs][inference]")
{
  std::string spec = temp_path("serving.yaml");
  write_file(spec,
             "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
             "inference: {poisson: {rate: 50, requests: 40, seed: 5, prompt_len: {dist: uniform, min: 8, max: 300},"
             " output_len: {dist: uniform, min: 2, max: 100}}}\n");
  CliResult a = run_cli("run " + spec + " --json");
  CliResult b = run_cli("run " + spec + " --json");
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  json j = json::parse(a.out);
  for (const char* k : {"ttft_s", "tpot_s", "latency_s"})
    for (const char* p : {"mean", "p50", "p90", "p99"})
      CHECK(j[k][p].get<double>() > 0);
  CHECK(j["ttft_s"]["p50"].get<double>() <= j["ttft_s"]["p99"].get<double>());
  for (const char* k :
       {"output_tokens_per_s", "kv_utilization", "preemptions", "max_running_seqs", "kv_capacity_tokens"})
    CHECK(j.contains(k));
  CHECK(j["requests_completed"] == 40);

  std::string h5 = temp_path("serving.h5");
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  H5::H5File f(h5, H5F_ACC_RDONLY);
  hsize_t n = 0;
  f.openDataSet("/requests/ttft_s").getSpace().getSimpleExtentDims(&n);
  CHECK(n == 40);
  std::vector<double> arrival(n), first(n);
  f.openDataSet("/requests/arrival_s").read(arrival.data(), H5::PredType::NATIVE_DOUBLE);
  f.openDataSet("/requests/first_token_s").read(first.data(), H5::PredType::NATIVE_DOUBLE);
  for (hsize_t i = 0; i < n; ++i)
    CHECK(first[i] > arrival[i]); // a token comes after its request
  CHECK(f.nameExists("/kv_cache/used_bytes"));
}

// Profiler traces memwall refuses, each with one line naming the file, the event or key
// and what is allowed: not a trace, no GPU activity, a cut gzip, a key given twice, a
// byte count that is no count, ranks that disagree or do not fit the layout.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

using memwall::test::refused;
using memwall::test::source_path;
using memwall::test::temp_path;
using memwall::test::write_file;

TEST_CASE("a_trace_spec_refuses_bad_traces_with_one_line", "[trace][errors]")
{
  const std::string hw = "hardware: {node: dgx-a100, gpus_per_node: 1}\n";
  std::string not_json = temp_path("not_a_trace.json");
  write_file(not_json, "this is not json {");
  CHECK_THAT(refused("trace_not_json", hw + "workload: {trace: " + not_json + "}\n"),
             Catch::Contains("not_a_trace.json: not a JSON trace"));

  std::string no_events = temp_path("no_events.json");
  write_file(no_events, R"({"schemaVersion": 1, "deviceProperties": []})");
  CHECK_THAT(refused("trace_no_events", hw + "workload: {trace: " + no_events + "}\n"),
             Catch::Contains("not a PyTorch profiler trace"));

  std::string cpu_only = temp_path("cpu_only.json");
  write_file(cpu_only, R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 5}]})");
  CHECK_THAT(refused("trace_cpu_only", hw + "workload: {trace: " + cpu_only + "}\n"),
             Catch::Contains("holds no GPU activity"));

  // A gzip file cut short: zlib's error, not a crash.
  std::string whole = memwall::test::read_file(source_path("tests/data/traces/v100-1rank.json.gz"));
  std::string cut   = temp_path("cut.json.gz");
  write_file(cut, whole.substr(0, whole.size() / 2));
  CHECK_THAT(refused("trace_cut", hw + "workload: {trace: " + cut + "}\n"), Catch::Contains("cut.json.gz"));

  CHECK_THAT(refused("trace_missing", hw + "workload: {trace: no-such-trace.json.gz}\n"),
             Catch::Contains("no-such-trace.json.gz: trace not found"));
  CHECK_THAT(refused("trace_glob_empty", hw + "workload: {trace: 'no-such-*.json.gz'}\n"),
             Catch::Contains("no file matches 'no-such-*.json.gz'"));
  CHECK_THAT(refused("trace_typo", hw + "workload: {trace: x.json, tarce: y}\n"), Catch::Contains("tarce"));
  CHECK_THAT(refused("trace_with_model", hw + "model: {preset: gpt2}\nworkload: {trace: x.json}\n"),
             Catch::Contains("takes only the section hardware"));
  CHECK_THAT(refused("trace_not_a_path", hw + "workload: {trace: {a: 1}}\n"), Catch::Contains("workload.trace"));
  // Two GPUs' traces on a cluster of one GPU.
  std::string t = source_path("tests/data/traces/v100-1rank.json.gz");
  CHECK_THAT(refused("trace_too_many_ranks", hw + "workload: {trace: [" + t + ", " + t + "]}\n"),
             Catch::Contains(
                 "the job's 2 ranks (one per trace, or its recorded world_size) is more than the cluster's 1 GPUs"));
}

TEST_CASE("a_trace_that_gives_a_key_twice_or_a_byte_count_that_is_no_count_is_refused", "[trace][errors]")
{
  // nlohmann keeps the last of a key given twice and the reader kept the first or the
  // last field by field: a trace that says two things is refused, as every other JSON
  // input is. A memcpy's bytes of -1 ended in exit 3, of "x" was read as 0; an allocator
  // event's fields were never checked.
  const std::string hw = "hardware: {node: dgx-a100, gpus_per_node: 1}\n";
  const std::string kernel =
      R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7}})";
  auto trace = [&](const std::string& name, const std::string& events, const std::string& top = "") {
    std::string f = temp_path(name + ".json");
    write_file(f, "{" + top + R"("traceEvents": [)" + events + "]}");
    return refused(name, hw + "workload: {trace: " + f + "}\n");
  };
  CHECK_THAT(trace("twice_dur", R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 5, "dur": 50,)"
                                R"( "args": {"device": 0, "stream": 7}})"),
             Catch::Contains("twice_dur.json: traceEvents[0]: key 'dur' given twice in one object"));
  CHECK_THAT(trace("twice_events", kernel, R"("traceEvents": [], )"),
             Catch::Contains("the top-level object: key 'traceEvents' given twice"));
  CHECK_THAT(trace("twice_world", kernel, R"("distributedInfo": {"world_size": 1, "world_size": 8}, )"),
             Catch::Contains("distributedInfo: key 'world_size' given twice"));
  auto memcpy = [](const std::string& bytes) {
    return R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 1, "dur": 5,)j"
           R"( "args": {"device": 0, "stream": 7, "bytes": )" +
           bytes + "}}";
  };
  for (const char* bytes : {"-1", R"("x")", "1.5", "null"})
    CHECK_THAT(trace("memcpy_bytes", memcpy(bytes) + "," + kernel),
               Catch::Contains("traceEvents[0] ('Memcpy HtoD (Pageable -> Device)'): args.bytes must be a number of "
                               "bytes, not negative"));
  auto memory = [](const std::string& field, const std::string& value) {
    std::string args = R"("Device Type": 1, "Device Id": 0, "Addr": 100, "Bytes": 1024, "Total Allocated": 1024)";
    size_t at        = args.find('"' + field + '"');
    size_t end       = args.find(',', at);
    args.replace(at, (end == std::string::npos ? args.size() : end) - at, '"' + field + "\": " + value);
    return R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 2, "args": {)" + args + "}}";
  };
  for (auto [field, value] : std::vector<std::pair<std::string, std::string>>{
           {"Bytes", R"("x")"}, {"Total Allocated", "-5"}, {"Addr", "null"}, {"Device Id", "-2"}})
    CHECK_THAT(trace("memory_field", memory(field, value) + "," + kernel),
               Catch::Contains("traceEvents[0] ('[memory]'): args." + field + " must be an integer"));
  // A free is an allocator event with negative Bytes: read, not refused.
  std::string ok = temp_path("memory_free.json");
  write_file(ok,
             R"({"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}], "traceEvents": [)" + memory("Bytes", "1024") +
                 "," +
                 R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 3, "args": {"Device Type": 1,)"
                 R"( "Device Id": 0, "Addr": 100, "Bytes": -1024, "Total Allocated": 0}},)" +
                 kernel + "]}");
  auto j = memwall::test::run_json("memory_free", hw + "workload: {trace: " + ok + "}\n");
  CHECK(j["max_peak_bytes"] == 1024.0);
}

TEST_CASE("traces_that_disagree_or_do_not_fit_the_layout_are_refused", "[trace][errors]")
{
  const std::string hw = "hardware: {node: dgx-a100, gpus_per_node: 2}\n";
  std::string v1       = source_path("tests/data/traces/v100-1rank.json.gz");
  std::string a1       = source_path("tests/data/traces/a100-2rank-nccl.json.gz");
  CHECK_THAT(refused("trace_disagree", hw + "workload: {trace: [" + v1 + ", " + a1 + "]}\n"),
             Catch::Contains("ranks disagree: recorded on 'NVIDIA A100-PG509-200'"));
  std::string unknown = temp_path("unknown_gpu.json");
  write_file(unknown, R"({"deviceProperties": [{"name": "NVIDIA Quadro RTX 8000", "totalGlobalMem": 50953404416}],)"
                      R"( "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,)"
                      R"( "dur": 5, "args": {"device": 0, "stream": 7}}]})");
  CHECK_THAT(refused("trace_unknown_gpu", hw + "workload: {trace: " + unknown + "}\n"),
             Catch::Contains("'NVIDIA Quadro RTX 8000', which is not a GPU preset; name the closest with "
                             "workload.recorded_on"));
  CHECK_THAT(refused("trace_bad_preset", hw + "workload: {trace: " + a1 + ", recorded_on: a100-pg509}\n"),
             Catch::Contains("a100-pg509"));
  CHECK_THAT(refused("trace_ranks_not_multiple", hw + "workload: {trace: [" + v1 + ", " + v1 + "], ranks: 3}\n"),
             Catch::Contains("workload.ranks (3) must be a multiple of the number of traces (2)"));
  CHECK_THAT(refused("trace_ranks_too_many", hw + "workload: {trace: " + v1 + ", ranks: 4}\n"),
             Catch::Contains("workload.ranks (4) is more than the cluster's 2 GPUs"));
}

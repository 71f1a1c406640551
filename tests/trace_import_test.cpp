// Replaying real PyTorch profiler traces (tests/data/traces, MIT): on the GPU they were
// recorded on, a trace must reproduce itself. The expected figures are read from the
// trace here with a plain JSON parse, independently of memwall's streaming reader.
#include "Simulation.hpp"
#include "TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <map>

using namespace memwall;
using memwall::test::refused;
using memwall::test::source_path;
using memwall::test::temp_path;
using memwall::test::write_file;

namespace {

nlohmann::json gunzip_json(const std::string& path)
{
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return nlohmann::json::parse(text);
}

// What the recording says: busy seconds per CUDA stream (ops on one stream never
// overlap, so their durations add up), the span from the first GPU activity, runtime
// call or allocator event to the last one's end, and the most "Total Allocated".
struct Recorded {
  std::map<int64_t, double> busy;
  double span = 0;
  double peak_allocated = 0;
};

Recorded recorded(const nlohmann::json& trace)
{
  Recorded r;
  double first = 1e300, last = -1e300;
  for (const auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if (e.value("ph", "") == "X" && (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_runtime")) {
      double ts = e["ts"].get<double>() * 1e-6, dur = e["dur"].get<double>() * 1e-6;
      first = std::min(first, ts);
      last  = std::max(last, ts + dur);
      if (cat != "cuda_runtime")
        r.busy[e["args"]["stream"].get<int64_t>()] += dur;
    } else if (e.value("name", "") == "[memory]" && e["args"]["Device Type"] == 1) {
      double ts = e["ts"].get<double>() * 1e-6;
      first     = std::min(first, ts);
      last      = std::max(last, ts);
      r.peak_allocated = std::max(r.peak_allocated, e["args"]["Total Allocated"].get<double>());
    }
  }
  r.span = last - first;
  return r;
}

struct Replayed {
  std::map<StreamKind, double> busy;
  double makespan = 0;
  double peak     = 0;
};

Replayed replayed(const std::string& hardware, const std::string& trace)
{
  std::string spec = temp_path("trace_" + trace + ".yaml");
  write_file(spec, "hardware: " + hardware + "\nworkload:\n  trace: " + source_path("tests/data/traces/" + trace) + "\n");
  RunResult r = simulate(load_spec(spec), /*in_child=*/true, {});
  Replayed out;
  for (const OpRecord& op : r.ops)
    if (op.kind == OpKind::kernel)
      out.busy[op.stream] += op.end - op.start;
  out.makespan = r.makespan_s;
  for (const PoolResult& p : r.pools)
    out.peak = std::max(out.peak, p.peak_bytes);
  return out;
}

void check_reproduces(const std::string& hardware, const std::string& trace, size_t streams)
{
  Recorded want = recorded(gunzip_json(source_path("tests/data/traces/" + trace)));
  Replayed got  = replayed(hardware, trace);
  REQUIRE(want.busy.size() == streams);
  REQUIRE(got.busy.size() == streams);
  // Busy time per stream within 3 % (streams matched by their busy time: the busiest
  // CUDA stream is memwall's compute stream).
  std::vector<double> a, b;
  for (auto& [s, t] : want.busy)
    a.push_back(t);
  for (auto& [s, t] : got.busy)
    b.push_back(t);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(b[i] == Approx(a[i]).epsilon(0.03));
  CHECK(got.makespan == Approx(want.span).epsilon(0.05));
  if (want.peak_allocated > 0)
    CHECK(got.peak == want.peak_allocated); // exactly: the allocator's own totals
}

const std::string v100_node = "{node: {preset: dgx-a100, gpu: v100-sxm2-32gb}, gpus_per_node: 1}";

} // namespace

TEST_CASE("a_v100_trace_replayed_on_a_v100_reproduces_its_stream_time_and_makespan", "[trace]")
{
  check_reproduces(v100_node, "v100-1rank.json.gz", 1);
}

TEST_CASE("a_trace_with_allocator_events_reproduces_its_peak_allocated_bytes_exactly", "[trace]")
{
  // 26,770 CUDA allocator events, written grouped by thread: their totals add up only
  // in time order. Peak "Total Allocated" 6,629,508,096 B; NCCL on a second stream.
  check_reproduces(v100_node, "v100-2rank-with-memory.json.gz", 2);
}

TEST_CASE("an_a100_trace_with_nccl_reproduces_its_compute_and_nccl_streams", "[trace]")
{
  check_reproduces("{node: dgx-a100, gpus_per_node: 1}", "a100-2rank-nccl.json.gz", 2);
}

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
             Catch::Contains("more GPUs than the cluster's 1"));
}

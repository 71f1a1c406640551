// Replaying real PyTorch profiler traces (tests/data/traces, MIT): on the GPU they were
// recorded on, a trace must reproduce itself. The expected figures are read from the
// trace here with a plain JSON parse, independently of memwall's streaming reader.
#include "analysis/StepReport.hpp"
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <tuple>

using namespace memwall;
using memwall::test::refused;
using memwall::test::source_path;
using memwall::test::temp_path;
using memwall::test::trace_spec;
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
  double span           = 0;
  double peak_allocated = 0;
};

Recorded recorded(const nlohmann::json& trace)
{
  Recorded r;
  double first = 1e300, last = -1e300;
  for (const auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if (e.value("ph", "") == "X" &&
        (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_runtime")) {
      double ts = e["ts"].get<double>() * 1e-6, dur = e["dur"].get<double>() * 1e-6;
      first = std::min(first, ts);
      last  = std::max(last, ts + dur);
      if (cat != "cuda_runtime")
        r.busy[e["args"]["stream"].get<int64_t>()] += dur;
    } else if (e.value("name", "") == "[memory]" && e["args"]["Device Type"] == 1) {
      double ts        = e["ts"].get<double>() * 1e-6;
      first            = std::min(first, ts);
      last             = std::max(last, ts);
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

Replayed replayed(const std::string& hardware, const std::string& trace, const std::string& more = "")
{
  std::string spec = trace_spec(hardware, trace, more);
  RunResult r      = simulate(load_spec(spec), /*in_child=*/true, {});
  Replayed out;
  for (const OpRecord& op : r.ops)
    if (op.kind == OpKind::kernel)
      out.busy[op.stream] += op.end - op.start;
  out.makespan = r.makespan_s;
  for (const PoolResult& p : r.pools)
    out.peak = std::max(out.peak, p.peak_bytes);
  return out;
}

void check_reproduces(const std::string& hardware, const std::string& trace, size_t streams,
                      const std::string& more = "")
{
  Recorded want = recorded(gunzip_json(source_path("tests/data/traces/" + trace)));
  Replayed got  = replayed(hardware, trace, more);
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
  // "NVIDIA A100-PG509-200" is no preset's name: the spec says which one it is.
  check_reproduces("{node: {preset: dgx-a100, gpu: a100-sxm4-40gb}, gpus_per_node: 1}", "a100-2rank-nccl.json.gz", 2,
                   "  recorded_on: a100-sxm4-40gb\n");
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

TEST_CASE("a_two_rank_nccl_trace_scaled_to_eight_ranks_spends_longer_in_its_all_reduces", "[trace][scale]")
{
  // The a100 trace's 21 all-reduces on one DGX A100 (NVLink), as 2 ranks and as 8
  // data-parallel ranks. A ring all-reduce moves 2 (n - 1) / n of its buffer over each
  // GPU's link: 1.0 x for 2 ranks, 1.75 x for 8; latency terms grow less. Same bytes.
  auto collectives = [](int ranks) {
    std::string spec = trace_spec("{node: dgx-a100, gpus_per_node: 8}", "a100-2rank-nccl.json.gz",
                                  "  recorded_on: a100-sxm4-40gb\n  ranks: " + std::to_string(ranks) + "\n");
    RunResult r      = simulate(load_spec(spec), /*in_child=*/true, {});
    double seconds = 0, bytes = 0;
    int count = 0;
    for (const OpRecord& op : r.ops)
      if (op.kind == OpKind::collective) {
        seconds += op.end - op.start;
        bytes += op.bytes;
        ++count;
      }
    return std::tuple{seconds, bytes, count};
  };
  // Bytes by hand from the trace: each NCCL kernel's "In msg nelems" x 4 B (Float) or
  // 8 B (Long): 15 all-reduces and 6 broadcasts, each of its whole buffer.
  double want_bytes    = 0;
  int want_count       = 0;
  nlohmann::json trace = gunzip_json(source_path("tests/data/traces/a100-2rank-nccl.json.gz"));
  for (const auto& e : trace["traceEvents"])
    if (e.value("cat", "") == "kernel" && e["args"].contains("Collective name")) {
      want_bytes += (e["args"]["dtype"] == "Long" ? 8.0 : 4.0) * e["args"]["In msg nelems"].get<double>();
      ++want_count;
    }
  auto [t2, b2, n2] = collectives(2);
  auto [t8, b8, n8] = collectives(8);
  CHECK(n2 == want_count);
  CHECK(n8 == want_count);
  CHECK(b2 == want_bytes);
  CHECK(b8 == want_bytes);
  CHECK(t8 > 1.3 * t2);
  CHECK(t8 <= 1.75 * t2);
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

TEST_CASE("an_allocation_takes_its_category_from_the_cpu_op_it_was_made_in", "[trace][memory]")
{
  // Four allocations, none freed, so all four are held at the end (the peak):
  //   1 MiB inside AccumulateGrad (inside a backward op)  -> gradients
  //   2 MiB inside Optimizer.step#Adam.step              -> optimizer
  //   4 MiB inside aten::linear                           -> activations
  //   8 MiB outside every op                              -> other
  auto mem = [](double ts, long long bytes, long long total) {
    return R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": )" +
           std::to_string(ts) + R"(, "args": {"Device Type": 1, "Device Id": 0, "Addr": )" + std::to_string(ts * 10) +
           R"(, "Bytes": )" + std::to_string(bytes) + R"(, "Total Allocated": )" + std::to_string(total) + "}},";
  };
  auto op = [](const std::string& name, double ts, double dur) {
    return R"({"ph": "X", "cat": "cpu_op", "name": ")" + name + R"(", "pid": 1, "tid": 1, "ts": )" +
           std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + "},";
  };
  const long long MiB = 1 << 20;
  std::string events  = op("autograd::engine::evaluate_function: AddmmBackward0", 10, 30) +
                       op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 20, 5) +
                       mem(22, MiB, MiB) + op("Optimizer.step#Adam.step", 50, 10) + mem(55, 2 * MiB, 3 * MiB) +
                       op("aten::linear", 70, 10) + mem(75, 4 * MiB, 7 * MiB) + mem(90, 8 * MiB, 15 * MiB) +
                       R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 5,)"
                       R"( "args": {"device": 0, "stream": 7}})";
  std::string trace = temp_path("scoped_memory.json");
  write_file(trace, R"({"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}], "traceEvents": [)" + events + "]}");
  auto j           = memwall::test::run_json("scoped_memory",
                                             "hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: " + trace + "}\n");
  const auto& peak = j["devices"][0]["peak_by_category"];
  CHECK(peak["gradients"] == 1.0 * MiB);
  CHECK(peak["optimizer"] == 2.0 * MiB);
  CHECK(peak["activations"] == 4.0 * MiB);
  CHECK(peak["other"] == 8.0 * MiB);
  CHECK(j["max_peak_bytes"] == 15.0 * MiB);
}

TEST_CASE("a_stream_wait_named_by_a_cuda_sync_event_waits_for_the_recorded_op_only", "[trace]")
{
  // Kineto's cuda_sync events (enable_cuda_sync_events) name what a stream waits for.
  // Launched in this order: A on stream 7 (t = 10..110 us), cudaEventRecord (corr 2),
  // B on stream 7 (110..310), cudaStreamWaitEvent (corr 4) for that event on stream 20,
  // C on stream 20. C waits for A only: it starts when A ends, at 110 us from A's
  // start, not after B. (Without the cuda_sync event the wait would be guessed, and a
  // guess the recording contradicts, B, dropped: C would start at its launch.)
  auto call = [](const char* name, double ts, int corr) {
    return std::string(R"({"ph": "X", "cat": "cuda_runtime", "name": ")") + name + R"(", "pid": 1, "tid": 1, "ts": )" +
           std::to_string(ts) + R"(, "dur": 1, "args": {"correlation": )" + std::to_string(corr) + "}},";
  };
  auto kernel = [](const char* name, int stream, double ts, double dur, int corr) {
    return std::string(R"({"ph": "X", "cat": "kernel", "name": ")") + name + R"(", "pid": 0, "tid": )" +
           std::to_string(stream) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) +
           R"(, "args": {"device": 0, "stream": )" + std::to_string(stream) + R"(, "correlation": )" +
           std::to_string(corr) + "}},";
  };
  std::string events =
      call("cudaLaunchKernel", 1, 1) + kernel("A", 7, 10, 100, 1) + call("cudaEventRecord", 3, 2) +
      call("cudaLaunchKernel", 5, 3) + kernel("B", 7, 110, 200, 3) + call("cudaStreamWaitEvent", 7, 4) +
      R"({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 20, "ts": 8, "dur": 0,)"
      R"( "args": {"cuda_sync_kind": "Stream Wait Event", "stream": 20, "correlation": 4, "device": 0,)"
      R"( "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 2}},)" +
      call("cudaLaunchKernel", 9, 5) +
      R"({"ph": "X", "cat": "kernel", "name": "C", "pid": 0, "tid": 20, "ts": 111,)"
      R"( "dur": 50, "args": {"device": 0, "stream": 20, "correlation": 5}})";
  std::string trace = temp_path("cuda_sync.json");
  write_file(trace, R"({"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}], "traceEvents": [)" + events + "]}");
  std::string spec = temp_path("cuda_sync.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: " + trace + "}\n");
  RunResult r = simulate(load_spec(spec), /*in_child=*/true, {});
  std::map<std::string, const OpRecord*> by_name;
  for (const OpRecord& op : r.ops)
    by_name[op.name] = &op;
  REQUIRE(by_name.count("A"));
  REQUIRE(by_name.count("C"));
  CHECK(by_name["C"]->start == Approx(by_name["A"]->end).margin(1e-12));
  CHECK(by_name["C"]->start < by_name["B"]->end);
}

TEST_CASE("an_nccl_subgroup_runs_over_its_own_ranks_and_the_world_over_all", "[trace][scale]")
{
  // Rank 3 of 8 (one DGX H100; recorded on an A100, so NCCL is modelled) runs two
  // all-reduces of 64 MiB: one in its tensor-parallel pair [2, 3], one over all 8. A ring
  // moves 2 (n - 1) / n of the buffer over each GPU's NVLink: 1.0 x for the pair,
  // 1.75 x for the world; the world's all-reduce takes longer, by at most 1.75 x.
  auto allreduce = [](int corr, double ts, const std::string& ranks) {
    return R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )" +
           std::to_string(ts) + R"(, "dur": 1, "args": {"correlation": )" + std::to_string(corr) + "}}," +
           R"({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 20, "ts": )" +
           std::to_string(ts + 5) + R"(, "dur": 900, "args": {"device": 3, "stream": 20, "correlation": )" +
           std::to_string(corr) +
           R"(, "Collective name": "allreduce", "In msg nelems": 16777216, "Out msg nelems": 16777216,)"
           R"( "dtype": "Float", "Group size": )" +
           std::to_string(std::count(ranks.begin(), ranks.end(), ',') + 1) + R"(, "Process Group Ranks": ")" + ranks +
           "\"}}";
  };
  std::string trace = temp_path("subgroup.json");
  write_file(
      trace,
      R"({"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}], "distributedInfo": {"rank": 3, "world_size": 8},)"
      R"( "traceEvents": [)" +
          allreduce(1, 10, "[2, 3]") + "," + allreduce(2, 1000, "[0, 1, 2, 3, 4, 5, 6, 7]") + "]}");
  std::string spec = temp_path("subgroup.yaml");
  write_file(spec, "hardware: {node: dgx-h100, gpus_per_node: 8}\nworkload: {trace: " + trace + "}\n");
  RunResult r = simulate(load_spec(spec), /*in_child=*/true, {});
  std::vector<const OpRecord*> c;
  for (const OpRecord& op : r.ops)
    if (op.kind == OpKind::collective)
      c.push_back(&op);
  REQUIRE(c.size() == 2);
  CHECK(c[0]->bytes == 64.0 * (1 << 20));
  CHECK(c[1]->bytes == 64.0 * (1 << 20));
  double pair = c[0]->end - c[0]->start, world = c[1]->end - c[1]->start;
  CHECK(world > 1.3 * pair);
  CHECK(world <= 1.75 * pair);
}

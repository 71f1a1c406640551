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
  // 1.75 x for the world; the world's all-reduce takes longer, by at most 1.75 x. (With
  // NVLink SHARP, on by default, the switch reduces: the world's moves the buffer once.)
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
  write_file(spec, "hardware: {node: dgx-h100, gpus_per_node: 8, network: {nvls: false}}\nworkload: {trace: " + trace +
                       "}\n");
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

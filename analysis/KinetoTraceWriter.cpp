#include "analysis/KinetoTraceWriter.hpp"

#include "base/AtomicOutput.hpp"
#include "base/JsonOutput.hpp"
#include "workloads/trace/OpJson.hpp"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <map>
#include <stdexcept>

namespace memwall {
namespace {

// The GPU whose file holds an op: where it runs, else the GPU it serves.
DeviceRef owner(const Op& op)
{
  for (const DeviceRef* d : {&op.device, &op.src, &op.dst, &op.pool})
    if (d->kind == DeviceKind::gpu)
      return *d;
  return op.device;
}

// NAME.rankR.json.gz, one GPU's or many: `workload: {trace: NAME.rank*.json.gz}` finds them all.
std::string rank_path(const std::string& path, size_t rank)
{
  size_t dot      = path.rfind(".json");
  std::string tag = ".rank" + std::to_string(rank);
  return dot == std::string::npos ? path + tag : path.substr(0, dot) + tag + path.substr(dot);
}

void write_text(const std::string& temp, const std::string& text, bool gzip)
{
  if (!gzip) {
    write_file_bytes(temp, text);
    return;
  }
  gzFile f = gzopen(temp.c_str(), "wb6");
  if (!f)
    throw std::runtime_error(temp + ": cannot write");
  bool ok = gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size());
  ok      = gzclose(f) == Z_OK && ok;
  if (!ok)
    throw std::runtime_error(temp + ": write failed (disk full?)");
}

nlohmann::json dag_meta(const OpDag& dag)
{
  nlohmann::json groups = nlohmann::json::array();
  for (int32_t g = 0; g < static_cast<int32_t>(dag.group_count()); ++g) {
    nlohmann::json m = nlohmann::json::array(), c = nlohmann::json::array();
    for (const DeviceRef& d : dag.group(g))
      m.push_back(device_to_json(d));
    for (const auto& other : dag.concurrent_groups(g)) {
      nlohmann::json o = nlohmann::json::array();
      for (const DeviceRef& d : other)
        o.push_back(device_to_json(d));
      c.push_back(o);
    }
    groups.push_back({{"members", m}, {"concurrent", c}});
  }
  nlohmann::json represents = nlohmann::json::array(), shadows = nlohmann::json::array();
  for (const auto& [d, n] : dag.represented()) {
    represents.push_back({device_to_json(d), n});
    const auto& peers = dag.shadows(d);
    if (!peers.empty()) {
      nlohmann::json p = nlohmann::json::array();
      for (const DeviceRef& q : peers)
        p.push_back(device_to_json(q));
      shadows.push_back({device_to_json(d), p});
    }
  }
  return {{"version", 1}, {"groups", groups}, {"represents", represents}, {"shadows", shadows}};
}

} // namespace

std::vector<std::string> write_kineto_traces(const OpDag& dag, const RunResult& r, const std::string& gpu_name,
                                             const std::string& path, const nlohmann::json& step)
{
  if (r.ops.size() < dag.size())
    throw std::logic_error("write_kineto_traces: the replay kept no record per op");
  // In-edges per op, less the stream order OpDag::add puts back on import.
  std::vector<std::vector<OpId>> deps(dag.size());
  for (const DagEdge& e : dag.edges())
    deps[e.later].push_back(e.earlier);
  std::map<std::pair<DeviceRef, StreamKind>, OpId> tail;
  std::map<DeviceRef, std::vector<OpId>> by_gpu;
  std::vector<OpId> stream_before(dag.size(), OpDag::none);
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op     = dag.op(id);
    auto [it, fresh] = tail.try_emplace({op.device, op.stream}, id);
    if (!fresh) {
      stream_before[id] = it->second;
      it->second        = id;
    }
    by_gpu[owner(op)].push_back(id);
  }
  std::vector<std::string> written;
  size_t rank = 0;
  for (const auto& [gpu, ids] : by_gpu) {
    nlohmann::json events = nlohmann::json::array();
    for (OpId id : ids) {
      const Op& op        = dag.op(id);
      const OpRecord& rec = r.ops[id];
      nlohmann::json m    = op_to_json(op);
      m["id"]             = id;
      nlohmann::json d    = nlohmann::json::array();
      bool skipped        = false; // the one stream-order edge (a duplicate edge stays)
      for (OpId e : deps[id]) {
        if (e == stream_before[id] && !skipped) {
          skipped = true;
          continue;
        }
        d.push_back(e);
      }
      if (!d.empty())
        m["deps"] = d;
      double ts = rec.start * 1e6, dur = (rec.end - rec.start) * 1e6;
      nlohmann::json args{
          {"device", op.device.index}, {"stream", static_cast<int>(op.stream)}, {"correlation", id}, {"memwall", m}};
      if (op.kind == OpKind::alloc || op.kind == OpKind::free) {
        args["Device Type"] = op.pool.kind == DeviceKind::gpu ? 1 : 0;
        args["Device Id"]   = op.pool.index;
        args["Addr"]        = op.tensor;
        args["Bytes"]       = op.kind == OpKind::alloc ? op.bytes : -op.bytes;
        events.push_back({{"ph", "i"},
                          {"cat", "cpu_instant_event"},
                          {"s", "t"},
                          {"name", "[memory]"},
                          {"pid", static_cast<int>(rank)},
                          {"tid", static_cast<int>(op.stream)},
                          {"ts", ts},
                          {"args", args}});
        continue;
      }
      const char* cat = op.kind == OpKind::copy ? "gpu_memcpy" : op.kind == OpKind::host_compute ? "cpu_op" : "kernel";
      if (op.kind == OpKind::copy)
        args["bytes"] = op.bytes;
      events.push_back({{"ph", "X"},
                        {"cat", cat},
                        {"name", op.name.str()},
                        {"pid", static_cast<int>(rank)},
                        {"tid", static_cast<int>(op.stream)},
                        {"ts", ts},
                        {"dur", dur},
                        {"args", args}});
    }
    nlohmann::json doc{{"schemaVersion", 1},
                       {"deviceProperties", {{{"id", gpu.index}, {"name", gpu_name}}}},
                       {"distributedInfo", {{"rank", rank}, {"world_size", by_gpu.size()}}},
                       {"displayTimeUnit", "ms"},
                       {"traceEvents", events}};
    if (rank == 0) {
      doc["memwall"] = dag_meta(dag);
      if (step.is_object())
        doc["memwall"]["step"] = step;
    }
    std::string file = rank_path(path, rank);
    bool gzip        = file.size() > 3 && file.compare(file.size() - 3, 3, ".gz") == 0;
    std::string text = json_text(doc);
    write_atomically(file, [&](const std::string& temp) { write_text(temp, text, gzip); });
    written.push_back(file);
    ++rank;
  }
  return written;
}

} // namespace memwall

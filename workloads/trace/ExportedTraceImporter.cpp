#include "workloads/trace/ExportedTraceImporter.hpp"

#include "base/InputError.hpp"
#include "workloads/trace/OpJson.hpp"

#include <algorithm>
#include <unordered_map>

namespace memwall {
namespace {

// Refuses a device the cluster does not have (the exported trace's spec was another).
void check_device(const DeviceRef& d, const ClusterSpec& c, const std::string& where)
{
  bool ok = d.node >= 0 && d.node < c.nodes && d.index >= 0 &&
            (d.kind == DeviceKind::gpu    ? d.index < c.gpus_per_node
             : d.kind == DeviceKind::host ? d.index < c.node.sockets
                                          : d.index == 0);
  if (!ok)
    throw InputError(where + ": device " + d.name() + " is not in the cluster (" + std::to_string(c.nodes) +
                     " nodes of " + std::to_string(c.gpus_per_node) + " GPUs and " + std::to_string(c.node.sockets) +
                     " sockets)");
}

std::vector<DeviceRef> devices_from_json(const nlohmann::json& j, const ClusterSpec& c, const std::string& where)
{
  if (!j.is_array())
    throw InputError(where + ": expected a list of devices");
  std::vector<DeviceRef> out;
  for (const auto& d : j) {
    out.push_back(device_from_json(d, where));
    check_device(out.back(), c, where);
  }
  return out;
}

} // namespace

OpDag import_exported(const std::vector<KinetoTrace>& traces, const ClusterSpec& cluster)
{
  const KinetoTrace* with_meta = nullptr;
  std::vector<std::pair<int64_t, std::pair<const nlohmann::json*, const KinetoTrace*>>> ops;
  for (const KinetoTrace& t : traces) {
    if (t.memwall_dag.is_object() && !with_meta)
      with_meta = &t;
    for (const nlohmann::json& j : t.memwall_ops) {
      if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer())
        throw InputError(t.file + ": an event's args.memwall has no integer id");
      ops.push_back({j["id"].get<int64_t>(), {&j, &t}});
    }
  }
  if (!with_meta)
    throw InputError(traces.front().file + ": an exported trace's top-level \"memwall\" section is missing");
  const nlohmann::json& meta = with_meta->memwall_dag;
  std::string where          = with_meta->file + ": memwall";
  OpDag dag;
  const nlohmann::json groups = meta.value("groups", nlohmann::json::array());
  if (!groups.is_array())
    throw InputError(where + ".groups: expected a list");
  for (const auto& g : groups) {
    if (!g.is_object())
      throw InputError(where + ".groups: each is {members, concurrent}");
    std::vector<std::vector<DeviceRef>> concurrent;
    for (const auto& c : g.value("concurrent", nlohmann::json::array()))
      concurrent.push_back(devices_from_json(c, cluster, where + ".groups"));
    std::vector<DeviceRef> members =
        devices_from_json(g.value("members", nlohmann::json()), cluster, where + ".groups");
    if (members.empty())
      throw InputError(where + ".groups: a group needs members");
    dag.add_group(std::move(members), std::move(concurrent));
  }
  for (const auto& r : meta.value("represents", nlohmann::json::array())) {
    if (!r.is_array() || r.size() != 2 || !r[1].is_number_integer() || r[1].get<int64_t>() < 1 ||
        r[1].get<int64_t>() > 100'000'000)
      throw InputError(where + ".represents: each is [device, count >= 1]");
    DeviceRef d = device_from_json(r[0], where + ".represents");
    check_device(d, cluster, where + ".represents");
    dag.set_represents(d, static_cast<int>(r[1].get<int64_t>()));
  }
  for (const auto& s : meta.value("shadows", nlohmann::json::array())) {
    if (!s.is_array() || s.size() != 2)
      throw InputError(where + ".shadows: each is [device, [peers]]");
    DeviceRef d = device_from_json(s[0], where + ".shadows");
    check_device(d, cluster, where + ".shadows");
    dag.set_shadows(d, devices_from_json(s[1], cluster, where + ".shadows"));
  }
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::unordered_map<uint32_t, std::pair<double, DeviceRef>> live; // tensor -> bytes, pool
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& [id, at] = ops[i];
    std::string op_where = at.second->file + ": op " + std::to_string(id);
    if (id != static_cast<int64_t>(i))
      throw InputError(op_where + ": ids must run 0, 1, 2, ... once each (expected " + std::to_string(i) + ")");
    const nlohmann::json& j = *at.first;
    Op op                   = op_from_json(j, op_where);
    for (const DeviceRef* d : {&op.device, &op.src, &op.dst, &op.pool})
      check_device(*d, cluster, op_where);
    if (op.kind == OpKind::collective && op.group >= static_cast<int32_t>(groups.size()))
      throw InputError(op_where + ": group " + std::to_string(op.group) + " is not among the " +
                       std::to_string(groups.size()) + " groups");
    if (op.kind == OpKind::alloc) {
      if (op.tensor == 0 || !live.emplace(op.tensor, std::pair{op.bytes, op.pool}).second)
        throw InputError(op_where + ": an alloc needs a tensor id not already allocated");
    } else if (op.kind == OpKind::free) {
      auto it = live.find(op.tensor);
      if (it == live.end() || it->second.first != op.bytes || !(it->second.second == op.pool))
        throw InputError(op_where + ": a free must match an earlier alloc's tensor, bytes and pool");
      live.erase(it);
    }
    std::vector<OpId> deps;
    for (const auto& d : j.value("deps", nlohmann::json::array())) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() >= id)
        throw InputError(op_where + ": args.memwall.deps lists ids of earlier ops");
      deps.push_back(static_cast<OpId>(d.get<int64_t>()));
    }
    dag.set_phase(op.phase);
    dag.add(op, deps);
  }
  return dag;
}

} // namespace memwall

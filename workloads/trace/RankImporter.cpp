#include "workloads/trace/RankImporter.hpp"

#include "base/InputError.hpp"

#include <algorithm>

namespace memwall {
namespace {

constexpr double ns = 1e-9;
// A dependency the recording contradicts by less than this is still taken (the trace's
// clocks of host and GPU are aligned to about a microsecond).
constexpr int64_t clock_slack_ns = 2000;

} // namespace

RankImporter::RankImporter(const KinetoTrace& t, OpDag& dag, const std::map<int, DeviceRef>& gpus,
                           const TraceImport& how, std::vector<OpId>& collectives, bool leads)
    : t_(t), dag_(dag), gpus_(gpus), how_(how), collectives_(collectives), leads_(leads), allocations_(t, dag, gpus)
{
  for (const auto& [dev, gpu] : gpus)
    streams_[dev] = map_streams(t, dev);
}

void RankImporter::run()
{
  origin_ = INT64_MAX;
  for (const TraceGpuOp& g : t_.gpu_ops)
    origin_ = std::min(origin_, g.start_ns);
  for (const TraceCall& c : t_.calls)
    origin_ = std::min(origin_, c.start_ns);
  for (const TraceMemoryEvent& m : t_.memory)
    if (cuda_memory(m))
      origin_ = std::min(origin_, m.ts_ns);
  cpu_ns_ = origin_;
  for (const TraceStreamWait& w : t_.stream_waits)
    waits_by_call_.emplace(w.call_correlation, &w);
  index_launches();
  allocations_.allocate_before_trace();
  for (const Item& it : timeline())
    switch (it.type) {
      case Item::call: on_call(t_.calls[it.index]); break;
      case Item::memory:
        host_until(t_.memory[it.index].ts_ns);
        allocations_.on_memory(t_.memory[it.index]);
        break;
      case Item::orphan: on_orphan(it.index); break;
    }
  // The host's work after its last launch (a final synchronise, the step's Python).
  int64_t last = cpu_ns_;
  for (const TraceCall& c : t_.calls)
    last = std::max(last, c.start_ns + c.dur_ns);
  if (last > cpu_ns_)
    host_until(last);
}

void RankImporter::index_launches()
{
  std::unordered_map<int64_t, uint32_t> call_of;
  for (uint32_t i = 0; i < t_.calls.size(); ++i)
    if (t_.calls[i].correlation >= 0)
      call_of.emplace(t_.calls[i].correlation, i);
  launched_by_.assign(t_.calls.size(), {});
  for (uint32_t g = 0; g < t_.gpu_ops.size(); ++g) {
    auto it = call_of.find(t_.gpu_ops[g].correlation);
    if (it == call_of.end())
      orphans_.push_back(g);
    else
      launched_by_[it->second].push_back(g);
  }
  for (auto& v : launched_by_)
    std::sort(v.begin(), v.end(),
              [&](uint32_t a, uint32_t b) { return t_.gpu_ops[a].start_ns < t_.gpu_ops[b].start_ns; });
}

std::vector<RankImporter::Item> RankImporter::timeline() const
{
  std::vector<Item> items;
  items.reserve(t_.calls.size() + t_.memory.size() + orphans_.size());
  for (uint32_t i = 0; i < t_.calls.size(); ++i)
    items.push_back({Item::call, t_.calls[i].start_ns, i});
  for (uint32_t i = 0; i < t_.memory.size(); ++i)
    if (cuda_memory(t_.memory[i]))
      items.push_back({Item::memory, t_.memory[i].ts_ns, i});
  for (uint32_t g : orphans_)
    items.push_back({Item::orphan, t_.gpu_ops[g].start_ns, g});
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.time < b.time; });
  return items;
}

OpId RankImporter::host_until(int64_t time)
{
  if (time <= cpu_ns_ && waits_.empty() && host_ != OpDag::none)
    return host_;
  Op op;
  op.kind   = OpKind::host_compute;
  op.device = first_gpu();
  op.stream = StreamKind::host;
  static const OpName host_step("host");
  op.name    = host_step;
  op.seconds = std::max<int64_t>(time - cpu_ns_, 1) * ns; // a step takes at least 1 ns
  host_      = dag_.add(op, waits_);
  waits_.clear();
  cpu_ns_ = std::max(cpu_ns_, time);
  return host_;
}

void RankImporter::on_call(const TraceCall& c)
{
  switch (c.kind) {
    case TraceCall::Kind::launch:
    case TraceCall::Kind::launch_and_sync: {
      OpId host = host_until(c.start_ns + c.dur_ns);
      for (uint32_t g : launched_by_[&c - t_.calls.data()])
        add_gpu_op(g, host);
      if (c.kind == TraceCall::Kind::launch_and_sync)
        synchronise(c);
      break;
    }
    case TraceCall::Kind::sync: synchronise(c); break;
    case TraceCall::Kind::wait_event: {
      auto it = waits_by_call_.find(c.correlation);
      if (it == waits_by_call_.end()) {
        wait_pending_ = true; // which event: inferred at the next launch
        break;
      }
      // Named by the trace: the waiting stream's next op waits for what the other
      // stream had been given when the event was recorded.
      const TraceStreamWait& w = *it->second;
      auto rec                 = recorded_tails_.find(w.record_correlation);
      if (rec == recorded_tails_.end())
        break;
      auto tail = rec->second.find({w.device, w.wait_on_stream});
      if (tail != rec->second.end())
        stream_waits_[{w.device, w.stream}].push_back(tail->second);
      break;
    }
    case TraceCall::Kind::event_record: {
      // What every stream had been given by now (the event's stream is named by the
      // wait that uses it).
      auto& tails = recorded_tails_[c.correlation];
      for (const auto& [key, ops] : launched_)
        if (!ops.empty())
          tails[key] = ops.back().id;
      break;
    }
    case TraceCall::Kind::other: break;
  }
}

void RankImporter::synchronise(const TraceCall& c)
{
  host_until(c.start_ns);
  int64_t returned = c.start_ns + c.dur_ns + clock_slack_ns;
  for (auto& [key, ops] : launched_) {
    auto it =
        std::upper_bound(ops.begin(), ops.end(), returned, [](int64_t t, const Launched& l) { return t < l.end_ns; });
    // ops end in launch order on one stream: the last one ended by `returned`
    if (it != ops.begin())
      waits_.push_back(std::prev(it)->id);
  }
  cpu_ns_ = std::max(cpu_ns_, c.start_ns + c.dur_ns);
}

const RankImporter::Named& RankImporter::named(const TraceGpuOp& g)
{
  if (named_.size() < t_.names.size())
    named_.resize(t_.names.size());
  std::optional<Named>& n = named_[g.name];
  if (!n) {
    const std::string& s = t_.names[g.name];
    n = Named{OpName(s), g.kind == TraceGpuOp::Kind::kernel ? kernel_kind(s) : KernelKind{KernelClass::elementwise}};
  }
  return *n;
}

Op RankImporter::gpu_op(const TraceGpuOp& g, std::vector<OpId>& deps)
{
  const Named& known = named(g);
  Op op;
  op.kind    = OpKind::kernel;
  op.device  = gpus_.at(g.device);
  op.stream  = streams_.at(g.device).at(g.stream);
  op.name    = known.name;
  op.seconds = std::max<int64_t>(g.dur_ns, 1) * ns;
  op.bytes   = g.bytes;
  op.kclass  = known.kind.kclass;
  op.dtype   = known.kind.dtype;
  if (how_.as_recorded)
    return op;
  const std::string& name = t_.names[g.name];
  bool h2d = name.find("HtoD") != std::string::npos, d2h = name.find("DtoH") != std::string::npos;
  if (g.kind == TraceGpuOp::Kind::memcpy && (h2d || d2h) && g.bytes > 0) {
    DeviceRef host{DeviceKind::host, op.device.node, how_.cluster->node.socket_of_gpu(op.device.index)};
    bool pinned = name.find("Pageable") == std::string::npos;
    Op copy =
        host_copy_op(op.device, op.stream, h2d ? host : op.device, h2d ? op.device : host, g.bytes, op.name, pinned);
    copy.seconds = 0;
    return copy;
  }
  CollectiveKind kind{};
  if (g.collective < 0 || !collective_kind(t_.collectives[g.collective].name, kind))
    return op;
  size_t k_th = next_collective_++;
  if (!leads_) { // the rank that leads runs it; here it only waits for it
    if (k_th >= collectives_.size())
      throw InputError(t_.file + ": ranks disagree: this rank runs more NCCL collectives (" + std::to_string(k_th + 1) +
                       "+) than the first trace's " + std::to_string(collectives_.size()));
    deps.push_back(collectives_[k_th]);
    op.seconds = ns;
    op.kclass  = KernelClass::other;
    return op;
  }
  const TraceCollective& c = t_.collectives[g.collective];
  double size              = element_bytes(c.dtype);
  int n                    = how_.ranks;
  int32_t group            = how_.group;
  int members              = c.ranks.empty() ? c.group_size : static_cast<int>(c.ranks.size());
  if (members > 0 && members < t_.world_size) { // a subgroup (tensor parallelism): as recorded
    group = subgroup(c, op.device, members);
    n     = members;
  }
  // memwall's sizes: all-reduce (and all-to-all, broadcast) its buffer; all-gather its
  // output and reduce-scatter its input, n times the per-rank part, so they grow with
  // the group.
  bool per_rank = (kind == CollectiveKind::all_gather && c.name.find("roadcast") == std::string::npos) ||
                  kind == CollectiveKind::reduce_scatter;
  double bytes = per_rank ? static_cast<double>(std::min(c.in_elements, c.out_elements)) * size * n
                          : static_cast<double>(c.in_elements) * size;
  Op coll      = collective_op(op.device, op.stream, kind, group, bytes, op.name);
  coll.seconds = op.seconds; // what it took where it was recorded, for the report only
  return coll;
}

int32_t RankImporter::subgroup(const TraceCollective& c, const DeviceRef& mine, int members)
{
  const ClusterSpec& cl = *how_.cluster;
  int slot              = mine.node * cl.gpus_per_node + mine.index;
  std::vector<int> slots;
  for (int r : c.ranks) {
    int s = slot + r - t_.rank;
    if (s < 0 || s >= cl.total_gpus()) {
      slots.clear();
      break;
    }
    slots.push_back(s);
  }
  if (slots.empty() || std::find(slots.begin(), slots.end(), slot) == slots.end()) {
    slots.clear();
    int base = slot - slot % members;
    for (int s = base; s < base + members && s < cl.total_gpus(); ++s)
      slots.push_back(s);
  }
  auto [it, fresh] = subgroups_.try_emplace(slots, -1);
  if (fresh) {
    std::vector<DeviceRef> devices;
    for (int s : slots)
      devices.push_back({DeviceKind::gpu, s / cl.gpus_per_node, s % cl.gpus_per_node});
    it->second = dag_.add_group(std::move(devices));
  }
  return it->second;
}

void RankImporter::add_gpu_op(uint32_t index, OpId host)
{
  const TraceGpuOp& g = t_.gpu_ops[index];
  std::vector<OpId> deps{host};
  Op op    = gpu_op(g, deps);
  auto key = std::make_pair(g.device, g.stream);
  if (auto w = stream_waits_.find(key); w != stream_waits_.end()) {
    deps.insert(deps.end(), w->second.begin(), w->second.end());
    stream_waits_.erase(w);
  }
  if (wait_pending_) {
    // Which event it waits for an old trace does not say: the other streams' latest
    // ops, where the recording shows they had ended when this op began.
    for (auto& [other, ops] : launched_)
      if (other.first == g.device && other != key && !ops.empty() && ops.back().end_ns <= g.start_ns + clock_slack_ns)
        deps.push_back(ops.back().id);
    wait_pending_ = false;
  }
  OpId id = dag_.add(op, deps);
  if (leads_ && op.kind == OpKind::collective)
    collectives_.push_back(id);
  std::vector<Launched>& mine = launched_[key];
  int64_t end                 = g.start_ns + g.dur_ns;
  if (!mine.empty()) // keep ends sorted (they are on one stream; clocks may jitter)
    end = std::max(end, mine.back().end_ns);
  mine.push_back({id, end});
}

} // namespace memwall

#include "TraceImporter.hpp"

#include "InputError.hpp"
#include "OpJson.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace memwall {
namespace {

constexpr double ns = 1e-9;
// A dependency the recording contradicts by less than this is still taken (the trace's
// clocks of host and GPU are aligned to about a microsecond).
constexpr int64_t clock_slack_ns = 2000;

// What a kernel is, from its name alone (traces without record_shapes give no more):
// GEMMs and convolutions (cuBLAS, CUTLASS, cuDNN's implicit GEMMs) and attention are
// compute-bound at the format their name says; PyTorch's elementwise, reduction,
// normalisation, copy and layout kernels memory-bound; the rest `other`.
struct KernelKind {
  KernelClass kclass = KernelClass::other;
  Dtype dtype        = Dtype::fp32;
};

KernelKind kernel_kind(const std::string& name)
{
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  auto any = [&](std::initializer_list<const char*> l) {
    for (const char* s : l)
      if (has(s))
        return true;
    return false;
  };
  KernelKind k;
  if (name.rfind("nccl", 0) == 0) // kept as a kernel only where NCCL runs as recorded
    return k;
  if (any({"tf32", "s1688", "s16816", "tensorop_s"}))
    k.dtype = Dtype::tf32;
  else if (any({"bf16", "BFloat16"}))
    k.dtype = Dtype::bf16;
  else if (any({"h884", "h1688", "h16816", "hmma", "fp16", "f16f16", "Half", "__half"}))
    k.dtype = Dtype::fp16;
  else if (any({"e4m3", "e5m2", "fp8"}))
    k.dtype = Dtype::fp8;
  if (any({"flash", "fmha", "attention", "Attention", "sdpa"}))
    k.kclass = KernelClass::attention;
  else if (any({"gemm", "Gemm", "GEMM", "cutlass", "xmma", "scudnn", "dgrad", "wgrad", "fprop", "conv", "Conv",
                "winograd", "h884", "s884", "1688", "16816", "hmma"}))
    k.kclass = KernelClass::gemm;
  else if (any({"elementwise", "reduce", "Reduce", "bn_", "batch_norm", "norm", "Norm", "softmax", "Softmax",
                "nchwTo", "nhwcTo", "copy", "Copy", "fill", "Fill", "index", "Index", "cat_", "Cat", "scatter",
                "gather", "embedding", "Embedding", "adam", "Adam", "multi_tensor", "pool", "Pool", "transpose",
                "dropout", "Dropout", "relu", "gelu", "silu", "Memcpy", "Memset", "unrolled", "vectorized"}))
    k.kclass = KernelClass::elementwise;
  return k;
}

// NCCL's "Collective name" as memwall's collective; false for what it does not model.
bool collective_kind(const std::string& name, CollectiveKind& kind)
{
  std::string n;
  for (char c : name)
    if (c != '_' && c != ' ')
      n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "allreduce")
    kind = CollectiveKind::all_reduce;
  else if (n == "allgather" || n == "allgatherbase" || n == "broadcast") // a ring broadcast moves what an all-gather does
    kind = CollectiveKind::all_gather;
  else if (n == "reducescatter" || n == "reducescatterbase")
    kind = CollectiveKind::reduce_scatter;
  else if (n == "alltoall" || n == "alltoallv" || n == "alltoallbase")
    kind = CollectiveKind::all_to_all;
  else
    return false;
  return true;
}

double element_bytes(const std::string& dtype)
{
  std::string d;
  for (char c : dtype)
    d += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (d == "double" || d == "long" || d == "int64" || d == "float64")
    return 8;
  if (d == "half" || d == "bfloat16" || d == "float16" || d == "short" || d == "int16")
    return 2;
  if (d == "byte" || d == "char" || d == "bool" || d == "uint8" || d == "int8" || d.rfind("float8", 0) == 0)
    return 1;
  return 4; // Float, Int
}

// What an allocation holds, from the CPU ops it was made in (innermost first): the
// optimizer's step its states and temporaries, gradient accumulation and DDP's buckets
// gradients, any other op (forward or backward) activations, outside every op `other`.
MemCategory scope_category(const std::vector<const std::string*>& scope)
{
  for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
    const std::string& n = **it;
    if (n.find("Optimizer.step") != std::string::npos || n.find("optimizer") != std::string::npos ||
        n.find("Optimizer.zero_grad") != std::string::npos)
      return MemCategory::optimizer;
    if (n.find("AccumulateGrad") != std::string::npos || n.find("Reducer") != std::string::npos ||
        n.find("DistributedDataParallel") != std::string::npos || n.find("nccl:") != std::string::npos)
      return MemCategory::gradients;
  }
  return scope.empty() ? MemCategory::other : MemCategory::activations;
}

// The CUDA streams of one GPU of a trace as memwall's streams: the busiest non-NCCL
// stream is `compute`, NCCL's streams `comm` first, the others by first use.
std::map<int64_t, StreamKind> map_streams(const KinetoTrace& t, int device)
{
  std::map<int64_t, size_t> count;
  std::map<int64_t, bool> nccl;
  std::vector<int64_t> order;
  for (const TraceGpuOp& g : t.gpu_ops) {
    if (g.device != device)
      continue;
    if (count[g.stream]++ == 0)
      order.push_back(g.stream);
    nccl[g.stream] = nccl[g.stream] || g.collective >= 0;
  }
  std::vector<StreamKind> free_kinds{StreamKind::compute, StreamKind::comm, StreamKind::h2d,
                                     StreamKind::d2h,     StreamKind::p2p,  StreamKind::gather};
  std::map<int64_t, StreamKind> out;
  auto take = [&](int64_t s, StreamKind preferred) {
    auto it = std::find(free_kinds.begin(), free_kinds.end(), preferred);
    if (it == free_kinds.end())
      it = free_kinds.begin();
    if (it == free_kinds.end())
      throw InputError(t.file + ": GPU " + std::to_string(device) + " uses " + std::to_string(count.size()) +
                       " CUDA streams; memwall replays at most 6 per GPU");
    out[s] = *it;
    free_kinds.erase(it);
  };
  int64_t busiest = -1;
  for (int64_t s : order)
    if (!nccl[s] && (busiest < 0 || count[s] > count[busiest]))
      busiest = s;
  if (busiest >= 0)
    take(busiest, StreamKind::compute);
  for (int64_t s : order)
    if (nccl[s])
      take(s, StreamKind::comm);
  for (int64_t s : order)
    if (!out.count(s))
      take(s, StreamKind::h2d);
  return out;
}

// Builds one rank's ops (see the header for the rules).
class RankImporter {
public:
  RankImporter(const KinetoTrace& t, OpDag& dag, const std::map<int, DeviceRef>& gpus, const TraceImport& how,
               std::vector<OpId>& collectives, bool leads)
      : t_(t), dag_(dag), gpus_(gpus), how_(how), collectives_(collectives), leads_(leads)
  {
    for (const auto& [dev, gpu] : gpus)
      streams_[dev] = map_streams(t, dev);
  }
  size_t collectives_seen() const { return next_collective_; }

  void run()
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
    allocate_before_trace();
    for (const Item& it : timeline())
      switch (it.type) {
        case Item::call: on_call(t_.calls[it.index]); break;
        case Item::memory: on_memory(t_.memory[it.index]); break;
        case Item::orphan: on_orphan(it.index); break;
      }
    // The host's work after its last launch (a final synchronise, the step's Python).
    int64_t last = cpu_ns_;
    for (const TraceCall& c : t_.calls)
      last = std::max(last, c.start_ns + c.dur_ns);
    if (last > cpu_ns_)
      host_until(last);
  }

private:
  struct Item {
    enum Type : uint8_t { memory, call, orphan } type; // memory first at equal times
    int64_t time;
    uint32_t index;
  };
  struct Launched {
    OpId id;
    int64_t end_ns;
  };

  bool cuda_memory(const TraceMemoryEvent& m) const { return m.device_type == 1 && gpus_.count(m.device_id); }

  void index_launches()
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
      std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) { return t_.gpu_ops[a].start_ns < t_.gpu_ops[b].start_ns; });
  }

  std::vector<Item> timeline() const
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

  // The host step ending at `time` (the time since the host's last step), and the
  // waits a synchronising call left for it.
  OpId host_until(int64_t time)
  {
    if (time <= cpu_ns_ && waits_.empty() && host_ != OpDag::none)
      return host_;
    Op op;
    op.kind    = OpKind::host_compute;
    op.device  = first_gpu();
    op.stream  = StreamKind::host;
    static const OpName host_step("host");
    op.name    = host_step;
    op.seconds = std::max<int64_t>(time - cpu_ns_, 1) * ns; // a step takes at least 1 ns
    host_      = dag_.add(op, waits_);
    waits_.clear();
    cpu_ns_ = std::max(cpu_ns_, time);
    return host_;
  }

  const DeviceRef& first_gpu() const { return gpus_.begin()->second; }

  void on_call(const TraceCall& c)
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

  // The host reached the call at its start and went on when it returned: it waits for
  // every stream's latest op that had ended by then.
  void synchronise(const TraceCall& c)
  {
    host_until(c.start_ns);
    int64_t returned = c.start_ns + c.dur_ns + clock_slack_ns;
    for (auto& [key, ops] : launched_) {
      auto it = std::upper_bound(ops.begin(), ops.end(), returned,
                                 [](int64_t t, const Launched& l) { return t < l.end_ns; });
      // ops end in launch order on one stream: the last one ended by `returned`
      if (it != ops.begin())
        waits_.push_back(std::prev(it)->id);
    }
    cpu_ns_ = std::max(cpu_ns_, c.start_ns + c.dur_ns);
  }

  void on_orphan(uint32_t g) { add_gpu_op(g, host_until(t_.gpu_ops[g].start_ns)); }

  // The op a GPU activity becomes: a kernel with its recorded time; replayed elsewhere
  // than where it was recorded, a host copy over the links and an NCCL kernel as the
  // collective on the modelled topology.
  // What each distinct name is, worked out once.
  struct Named {
    OpName name;
    KernelKind kind;
  };
  const Named& named(const TraceGpuOp& g)
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

  Op gpu_op(const TraceGpuOp& g, std::vector<OpId>& deps)
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
      Op copy = host_copy_op(op.device, op.stream, h2d ? host : op.device, h2d ? op.device : host, g.bytes, op.name, pinned);
      copy.seconds = 0;
      return copy;
    }
    CollectiveKind kind{};
    if (g.collective < 0 || !collective_kind(t_.collectives[g.collective].name, kind))
      return op;
    size_t k_th = next_collective_++;
    if (!leads_) { // the rank that leads runs it; here it only waits for it
      if (k_th >= collectives_.size())
        throw InputError(t_.file + ": ranks disagree: this rank runs more NCCL collectives (" +
                         std::to_string(k_th + 1) + "+) than the first trace's " + std::to_string(collectives_.size()));
      deps.push_back(collectives_[k_th]);
      op.seconds = ns;
      op.kclass  = KernelClass::other;
      return op;
    }
    const TraceCollective& c = t_.collectives[g.collective];
    double size   = element_bytes(c.dtype);
    int n         = how_.ranks;
    int32_t group = how_.group;
    int members   = c.ranks.empty() ? c.group_size : static_cast<int>(c.ranks.size());
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
    Op coll     = collective_op(op.device, op.stream, kind, group, bytes, op.name);
    coll.seconds = op.seconds; // what it took where it was recorded, for the report only
    return coll;
  }

  // The GPUs of a process group smaller than the world: its ranks placed as they sit
  // around this rank's (rank r on the GPU this rank's is on, plus r - this rank), where
  // the trace lists them and they fit; else the `members` consecutive GPUs holding this
  // one (Megatron's tensor-parallel groups).
  int32_t subgroup(const TraceCollective& c, const DeviceRef& mine, int members)
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

  void add_gpu_op(uint32_t index, OpId host)
  {
    const TraceGpuOp& g = t_.gpu_ops[index];
    std::vector<OpId> deps{host};
    Op op = gpu_op(g, deps);
    auto key = std::make_pair(g.device, g.stream);
    if (auto w = stream_waits_.find(key); w != stream_waits_.end()) {
      deps.insert(deps.end(), w->second.begin(), w->second.end());
      stream_waits_.erase(w);
    }
    if (wait_pending_) {
      // Which event it waits for an old trace does not say: the other streams' latest
      // ops, where the recording shows they had ended when this op began.
      for (auto& [other, ops] : launched_)
        if (other.first == g.device && other != key && !ops.empty() &&
            ops.back().end_ns <= g.start_ns + clock_slack_ns)
          deps.push_back(ops.back().id);
      wait_pending_ = false;
    }
    OpId id = dag_.add(op, deps);
    if (leads_ && op.kind == OpKind::collective)
      collectives_.push_back(id);
    std::vector<Launched>& mine = launched_[key];
    int64_t end = g.start_ns + g.dur_ns;
    if (!mine.empty()) // keep ends sorted (they are on one stream; clocks may jitter)
      end = std::max(end, mine.back().end_ns);
    mine.push_back({id, end});
  }

  void allocate_before_trace()
  {
    std::map<int, bool> seen;
    for (const TraceMemoryEvent& m : t_.memory) {
      if (!cuda_memory(m) || seen[m.device_id])
        continue;
      seen[m.device_id] = true;
      int64_t before = m.total_allocated - m.bytes;
      if (before <= 0)
        continue;
      const DeviceRef& gpu = gpus_.at(m.device_id);
      before_[m.device_id] = dag_.alloc(gpu, StreamKind::host, gpu, MemCategory::other, static_cast<double>(before),
                                        "allocated before the trace");
      before_left_[m.device_id] = before;
    }
    // A GPU the allocator said nothing of still has its memory reported (as 0 B), and
    // is the one the step's breakdown reads.
    for (const auto& [dev, gpu] : gpus_)
      if (!seen[dev])
        dag_.alloc(gpu, StreamKind::host, gpu, MemCategory::other, 0,
                   "no allocator events in the trace (record with profile_memory=True)");
  }

  // The CPU ops on `tid` open at `ts` (memory events come in time order: each thread's
  // stack is walked forward once).
  std::vector<const std::string*> scope_at(int64_t tid, int64_t ts)
  {
    Scope& s = scopes_[tid];
    if (!s.ready) {
      auto lo = std::lower_bound(t_.cpu_ops.begin(), t_.cpu_ops.end(), tid,
                                 [](const TraceCpuOp& o, int64_t t) { return o.tid < t; });
      s.next  = static_cast<size_t>(lo - t_.cpu_ops.begin());
      s.ready = true;
    }
    while (s.next < t_.cpu_ops.size() && t_.cpu_ops[s.next].tid == tid && t_.cpu_ops[s.next].start_ns <= ts) {
      const TraceCpuOp& o = t_.cpu_ops[s.next++];
      while (!s.open.empty() && s.open.back()->start_ns + s.open.back()->dur_ns <= o.start_ns)
        s.open.pop_back();
      s.open.push_back(&o);
    }
    while (!s.open.empty() && s.open.back()->start_ns + s.open.back()->dur_ns < ts)
      s.open.pop_back();
    std::vector<const std::string*> names;
    for (const TraceCpuOp* o : s.open)
      if (o->start_ns + o->dur_ns >= ts)
        names.push_back(&t_.names[o->name]);
    return names;
  }

  void on_memory(const TraceMemoryEvent& m)
  {
    host_until(m.ts_ns);
    const DeviceRef& gpu = gpus_.at(m.device_id);
    auto& live = live_[m.device_id];
    if (m.bytes > 0) {
      MemCategory c = scope_category(scope_at(m.tid, m.ts_ns));
      live[m.addr]  = dag_.alloc(gpu, StreamKind::host, gpu, c, static_cast<double>(m.bytes), "alloc");
      return;
    }
    if (m.bytes == 0)
      return;
    auto it = live.find(m.addr);
    if (it != live.end()) {
      dag_.free(it->second, gpu, StreamKind::host, "free");
      live.erase(it);
      return;
    }
    // A block allocated before the trace began.
    int64_t size = -m.bytes;
    auto b = before_.find(m.device_id);
    if (b == before_.end() || before_left_[m.device_id] < size)
      return;
    Tensor part = b->second;
    part.bytes  = static_cast<double>(size);
    before_left_[m.device_id] -= size;
    dag_.free(part, gpu, StreamKind::host, "free");
  }

  const KinetoTrace& t_;
  OpDag& dag_;
  const std::map<int, DeviceRef>& gpus_;
  const TraceImport& how_;
  std::vector<OpId>& collectives_; // the leading rank's collectives, in order
  bool leads_;
  size_t next_collective_ = 0;
  std::vector<std::optional<Named>> named_; // per KinetoTrace::names
  struct Scope {
    bool ready  = false;
    size_t next = 0;                     // the thread's next op in KinetoTrace::cpu_ops
    std::vector<const TraceCpuOp*> open; // its ops open at the last event, outermost first
  };
  std::map<int64_t, Scope> scopes_;
  std::map<std::vector<int>, int32_t> subgroups_; // GPU slots -> OpDag group
  // Stream waits the trace names (cuda_sync events): by their cudaStreamWaitEvent call;
  // each cudaEventRecord call's view of every stream's last op; the waits the next op of
  // a stream takes.
  std::unordered_map<int64_t, const TraceStreamWait*> waits_by_call_;
  std::unordered_map<int64_t, std::map<std::pair<int, int64_t>, OpId>> recorded_tails_;
  std::map<std::pair<int, int64_t>, std::vector<OpId>> stream_waits_;
  std::map<int, std::map<int64_t, StreamKind>> streams_;
  std::vector<std::vector<uint32_t>> launched_by_; // per call: the GPU ops it launched
  std::vector<uint32_t> orphans_;                   // GPU ops no call launched
  std::map<std::pair<int, int64_t>, std::vector<Launched>> launched_; // per (device, stream)
  std::map<int, std::unordered_map<uint64_t, Tensor>> live_;
  std::map<int, Tensor> before_;
  std::map<int, int64_t> before_left_;
  std::vector<OpId> waits_;
  bool wait_pending_ = false;
  int64_t origin_ = 0, cpu_ns_ = 0;
  OpId host_ = OpDag::none;
};

// Refuses a device the cluster does not have (the exported trace's spec was another).
void check_device(const DeviceRef& d, const ClusterSpec& c, const std::string& where)
{
  bool ok = d.node >= 0 && d.node < c.nodes && d.index >= 0 &&
            (d.kind == DeviceKind::gpu ? d.index < c.gpus_per_node
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

// A trace memwall exported: its ops rebuilt as they were, ids, dependencies, groups and
// folded ranks included, so the replay is the one the export came from.
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
    std::vector<DeviceRef> members = devices_from_json(g.value("members", nlohmann::json()), cluster, where + ".groups");
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
    Op op = op_from_json(j, op_where);
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

} // namespace

OpDag import_traces(const std::vector<KinetoTrace>& traces, const ClusterSpec& cluster, TraceImport how)
{
  for (const KinetoTrace& t : traces)
    if (!t.memwall_ops.empty())
      return import_exported(traces, cluster);
  OpDag dag;
  how.cluster = &cluster;
  int files = static_cast<int>(traces.size()), world = files;
  for (const KinetoTrace& t : traces)
    world = std::max(world, t.world_size);
  bool given = how.ranks > 0;
  if (!given) // as recorded no collective is modelled: only the traced GPUs are needed
    how.ranks = how.as_recorded || world % files != 0 ? files : world;
  if (given && how.ranks % files != 0)
    throw InputError(traces.front().file + ": workload.ranks (" + std::to_string(how.ranks) +
                     ") must be a multiple of the number of traces (" + std::to_string(files) + ")");
  if (how.ranks > cluster.total_gpus())
    throw InputError(traces.front().file + ": " +
                     (given ? "workload.ranks (" + std::to_string(how.ranks) + ")"
                            : "the job's " + std::to_string(how.ranks) + " ranks (one per trace, or its recorded world_size)") +
                     " is more than the cluster's " + std::to_string(cluster.total_gpus()) +
                     " GPUs (hardware.nodes x hardware.gpus_per_node)" + (given ? "" : "; or set workload.ranks"));
  // Rank r on the cluster's GPU r; the collectives span all ranks (data parallelism).
  std::vector<DeviceRef> all;
  for (int r = 0; r < how.ranks; ++r)
    all.push_back({DeviceKind::gpu, r / cluster.gpus_per_node, r % cluster.gpus_per_node});
  how.group = dag.add_group(all);
  std::vector<OpId> collectives;
  size_t expected = 0;
  int next = 0;
  for (const KinetoTrace& t : traces) {
    std::map<int, DeviceRef> gpus;
    for (const TraceGpuOp& g : t.gpu_ops)
      gpus.emplace(g.device, DeviceRef{});
    for (auto& [dev, ref] : gpus) {
      if (next >= cluster.total_gpus())
        throw InputError(t.file + ": the traces use more GPUs than the cluster's " +
                         std::to_string(cluster.total_gpus()) + " (hardware.nodes x hardware.gpus_per_node)");
      ref = {DeviceKind::gpu, next / cluster.gpus_per_node, next % cluster.gpus_per_node};
      ++next;
    }
    RankImporter rank(t, dag, gpus, how, collectives, &t == &traces.front());
    rank.run();
    if (&t == &traces.front())
      expected = collectives.size();
    else if (!how.as_recorded && rank.collectives_seen() != expected)
      throw InputError(t.file + ": ranks disagree: " + std::to_string(rank.collectives_seen()) +
                       " NCCL collectives here, " + std::to_string(expected) + " in " + traces.front().file);
    for (const auto& [dev, gpu] : gpus)
      dag.set_represents(gpu, how.ranks / static_cast<int>(traces.size()));
  }
  return dag;
}

} // namespace memwall

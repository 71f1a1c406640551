// Unified memory in the replay (PagingReplay.hpp, sim/paging). A kernel that touches managed
// pages away from its GPU runs as steps, each started when the one before ends:
//
//   [prefetch: evict, migrate]  bulk, at the copy engine's rate   (prefetch: layer)
//   [driver]                    fault_batch_s x ceil(faults / faults_per_batch)
//   [evict]                     write-back of the chunks making room   \ on-demand rate:
//   [migrate]                   the faulted chunks                     / bytes / efficiency
//   kernel                      + remote reads over PCIe, + the next kernel's prefetch
//
// The driver serves one GPU's faults in one thread, evicting before it migrates, so the
// steps do not overlap. Transfers are flows on the GPU's route to its host, sharing the
// PCIe switch and uplink with every other copy.
#include "sim/replay/PagingReplay.hpp"

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace memwall {

PagingReplay::PagingReplay(const OpDag& dag, const UnifiedMemoryConfig& memory, ActivityLauncher& launcher,
                           PoolTable& pools)
    : dag_(dag), memory_(memory), launcher_(launcher), pools_(pools)
{
  if (on())
    prefetch_ = prefetch_registry().make(memory_.prefetch);
}

PagingReplay::GpuPaging& PagingReplay::gpu_state(const DeviceRef& gpu)
{
  auto [it, fresh] = gpus_.try_emplace(gpu);
  if (fresh) {
    it->second.memory        = std::make_unique<ManagedMemory>(memory_, eviction_registry().make(memory_.eviction));
    it->second.result.device = gpu;
    it->second.result.name   = gpu.name();
  }
  return it->second;
}

void PagingReplay::apply(const DeviceRef& gpu, const Migration& m, const OpName& what)
{
  double now     = sg4::Engine::get_clock();
  DeviceRef host = launcher_.host_of(gpu);
  // Host memory is shared by the ranks on the socket that this GPU stands for.
  double sharing = 1;
  for (const DeviceRef& peer : dag_.shadows(gpu))
    if (launcher_.host_of(peer) == host)
      sharing += 1;
  bool changed = false;
  for (size_t c = 0; c < mem_category_count; ++c) {
    auto cat = static_cast<MemCategory>(c);
    // Frees first, so that a pool never reads as over capacity in between.
    if (m.to_gpu[c] < 0)
      pools_.pool(gpu).free(cat, -m.to_gpu[c], now);
    if (m.to_host[c] < 0)
      pools_.pool(host).free(cat, -m.to_host[c] * sharing, now);
    changed = changed || m.to_gpu[c] != 0 || m.to_host[c] != 0;
  }
  for (size_t c = 0; c < mem_category_count; ++c) {
    auto cat = static_cast<MemCategory>(c);
    if (m.to_gpu[c] > 0)
      pools_.pool(gpu).alloc(cat, m.to_gpu[c], now, what);
    if (m.to_host[c] > 0)
      pools_.pool(host).alloc(cat, m.to_host[c] * sharing, now, what);
  }
  GpuPaging& g    = gpu_state(gpu);
  PagingResult& r = g.result;
  r.migrated_h2d_bytes += m.h2d;
  r.migrated_d2h_bytes += m.d2h;
  r.remote_bytes += m.remote;
  r.faults += m.faults;
  r.fault_batches += memory_.fault_batches(m.faults);
  r.evictions += m.evictions;
  r.thrashing_pages += m.thrashing_pages;
  if (changed) {
    double host_bytes = r.timeline.empty() ? 0 : r.timeline.back().host_bytes;
    for (size_t c = 0; c < mem_category_count; ++c)
      host_bytes += m.to_host[c];
    r.timeline.push_back({now, g.memory->resident_bytes(), std::max(0.0, host_bytes)});
  }
  note_demand(gpu);
}

void PagingReplay::note_demand(const DeviceRef& gpu)
{
  PagingResult& r     = gpu_state(gpu).result;
  double host         = r.timeline.empty() ? 0 : r.timeline.back().host_bytes;
  r.peak_demand_bytes = std::max(r.peak_demand_bytes, pools_.pool(gpu).used_bytes() + host);
}

void PagingReplay::alloc(OpId id, const Op& op)
{
  const UnifiedMemoryConfig& cfg = memory_;
  GpuPaging& g                   = gpu_state(op.pool);
  if (op.tensor != 0 && cfg.is_managed(op.category) && op.category != MemCategory::context) {
    // Weights and optimizer states are written by the CPU (loaded, initialised): cold, their
    // pages are on the host; warm, a previous step left what fits on the GPU. What a
    // kernel writes first is populated on the GPU.
    // Memory read remotely (accessed_by, preferred host) stays where the CPU wrote it.
    bool persistent = op.category == MemCategory::weights || op.category == MemCategory::optimizer;
    auto start      = !persistent                  ? ManagedMemory::Start::gpu
                      : cfg.is_remote(op.category) ? ManagedMemory::Start::host
                      : cfg.warm                   ? ManagedMemory::Start::gpu_if_room
                                                   : ManagedMemory::Start::host;
    Migration m     = g.memory->add(op.tensor, op.category, op.bytes, start, hbm_room(op.pool));
    apply(op.pool, m, op.name);
    // Room for first-touch pages is made by the driver, evicting as it does for faults.
    start_flow(id, op.pool, false, m.d2h, 1.0 / cfg.migration_efficiency);
    if (prefetch_->at_alloc()) {
      Migration bulk = g.memory->access({{op.tensor, 0, op.bytes, false}}, hbm_room(op.pool), false);
      apply(op.pool, bulk, op.name);
      start_flow(id, op.pool, false, bulk.d2h, 1.0);
      start_flow(id, op.pool, true, bulk.h2d, 1.0);
    }
    return;
  }
  // cudaMalloc under memory pressure evicts managed chunks to make room: for the bytes
  // themselves, or for the new segment a framework's allocator asks for.
  MemoryPool& pool = pools_.pool(op.pool);
  Migration m      = g.memory->make_room(pool.needs(op.category, op.bytes, op.tensor), hbm_room(op.pool));
  apply(op.pool, m, op.name);
  start_flow(id, op.pool, false, m.d2h, 1.0 / cfg.migration_efficiency);
  pool.alloc(op.category, op.bytes, sg4::Engine::get_clock(), op.name, op.tensor);
  note_demand(op.pool);
}

bool PagingReplay::free_managed(const Op& op)
{
  if (op.pool.kind != DeviceKind::gpu || op.tensor == 0)
    return false;
  GpuPaging& g = gpu_state(op.pool);
  if (!g.memory->holds(op.tensor))
    return false;
  apply(op.pool, g.memory->remove(op.tensor), op.name);
  return true;
}

std::vector<OpId> PagingReplay::kernels_ahead(OpId id, const Op& op, int count) const
{
  // The next kernels of the stream: the DAG holds them in issue order; a short window,
  // as a framework prefetches one layer ahead.
  constexpr size_t window = 256;
  std::vector<OpId> out;
  for (size_t v = id + 1; v < dag_.size() && v <= id + window && static_cast<int>(out.size()) < count; ++v) {
    const Op& next = dag_.op(static_cast<OpId>(v));
    if (next.kind == OpKind::kernel && next.device == op.device && next.stream == op.stream &&
        !dag_.accesses(static_cast<OpId>(v)).empty())
      out.push_back(static_cast<OpId>(v));
  }
  return out;
}

void PagingReplay::start_kernel(OpId id, const Op& op)
{
  const UnifiedMemoryConfig& cfg = memory_;
  GpuPaging& g                   = gpu_state(op.device);
  const auto& acc                = dag_.accesses(id);
  PagedKernel pk;
  auto step = [&](Step::Kind k, double amount, double scale) {
    if (amount > 0)
      pk.steps.push_back({k, amount, scale});
  };
  int ahead = prefetch_->kernels_ahead();
  if (ahead > 0) {
    Migration bulk = g.memory->access(acc, hbm_room(op.device), false);
    apply(op.device, bulk, op.name);
    step(Step::Kind::evict, bulk.d2h, 1.0);
    step(Step::Kind::migrate, bulk.h2d, 1.0);
  }
  Migration f = g.memory->access(acc, hbm_room(op.device), true);
  apply(op.device, f, op.name);
  step(Step::Kind::driver, static_cast<double>(cfg.fault_batches(f.faults)) * cfg.fault_batch_s, 1.0);
  step(Step::Kind::evict, f.d2h, 1.0 / cfg.migration_efficiency);
  step(Step::Kind::migrate, f.h2d, 1.0 / cfg.migration_efficiency);
  pk.steps.push_back({Step::Kind::kernel, 0, 1.0});
  pk.remote = f.remote;
  for (OpId next : kernels_ahead(id, op, ahead - 1)) {
    Migration a = g.memory->access(dag_.accesses(next), hbm_room(op.device), false);
    apply(op.device, a, dag_.op(next).name);
    pk.ahead_h2d += a.h2d;
    pk.ahead_d2h += a.d2h;
  }
  kernels_[id] = std::move(pk);
  start_step(id);
}

void PagingReplay::start_flow(OpId id, const DeviceRef& gpu, bool to_gpu, double bytes, double scale)
{
  if (bytes <= 0)
    return;
  auto one = [&](const DeviceRef& g) {
    DeviceRef host = launcher_.host_of(g);
    launcher_.start_flow(id, to_gpu ? host : g, to_gpu ? g : host, bytes, bytes * scale);
    launcher_.slots().mark_last_paging();
  };
  one(gpu);
  for (const DeviceRef& peer : dag_.shadows(gpu))
    one(launcher_.shadow_of(gpu, peer, gpu));
}

// Starts the kernel's next step; false when all have run, or op `id` is no paged kernel.
bool PagingReplay::start_step(OpId id)
{
  auto it = kernels_.find(id);
  if (it == kernels_.end()) // another op's activity: no paging steps of its own
    return false;
  PagedKernel& pk = it->second;
  if (pk.next == pk.steps.size())
    return false;
  const Step& s = pk.steps[pk.next++];
  const Op& op  = dag_.op(id);
  switch (s.kind) {
    case Step::Kind::driver:
      launcher_.start_delay(id, s.amount);
      launcher_.slots().mark_last_paging();
      break;
    case Step::Kind::evict: start_flow(id, op.device, false, s.amount, s.scale); break;
    case Step::Kind::migrate: start_flow(id, op.device, true, s.amount, s.scale); break;
    case Step::Kind::kernel:
      pk.exec_start = sg4::Engine::get_clock();
      launcher_.start_kernel(id, op);
      start_flow(id, op.device, true, pk.remote, 1.0);
      start_flow(id, op.device, false, pk.ahead_d2h, 1.0);
      start_flow(id, op.device, true, pk.ahead_h2d, 1.0);
      break;
  }
  return true;
}

// The kernel's paging time: waiting before it could run, and after its own work ended
// for remote reads and the next kernel's prefetch.
void PagingReplay::finish_kernel(OpId id, OpRecord* rec)
{
  auto it = kernels_.find(id);
  if (it == kernels_.end())
    return;
  rec->paging_s = (it->second.exec_start - rec->start) + std::max(0.0, rec->end - it->second.own_end);
  gpu_state(dag_.op(id).device).result.stall_s += rec->paging_s;
  kernels_.erase(it);
}

std::vector<PagingResult> PagingReplay::take_results()
{
  std::vector<PagingResult> out;
  for (auto& [d, g] : gpus_)
    out.push_back(std::move(g.result));
  return out;
}

} // namespace memwall

// How the replay turns an op into SimGrid activities (ActivityLauncher.hpp): a kernel's
// Exec and HBM flow, host compute, and the cached routes the flows take; shadow ranks'
// traffic mapped onto their own devices. Copies are in ActivityLauncherCopies.cpp.
#include "sim/replay/ActivityLauncher.hpp"

#include <algorithm>

#include "sim/replay/OrbitFold.hpp"
#include "sim/timing/KernelTiming.hpp"

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace memwall {

ActivityLauncher::ActivityLauncher(const OpDag& dag, const Platform& platform, OpIndex& index, ChainState& chains,
                                   const GpuSpec* recorded_on)
    : dag_(dag), platform_(platform), index_(index), chains_(chains),
      kernel_timer_(platform.cluster().node.gpu, recorded_on)
{}

void ActivityLauncher::note_streams(size_t from, size_t to)
{
  // A GPU whose kernels all run on one stream, and which copies nothing to itself,
  // never has two users of its HBM at once: its kernels can be single timed activities.
  chains_.visit(from, to, [&](const Op& op) {
    if (op.kind == OpKind::kernel && op.seconds <= 0) { // a measured kernel's time is all its own
      auto [it, fresh] = streams_.kernel_stream.try_emplace(op.device, op.stream);
      if (!fresh && it->second != op.stream)
        streams_.shared_hbm.insert(op.device);
    } else if (op.kind == OpKind::copy && op.src == op.dst) {
      streams_.shared_hbm.insert(op.src);
    }
  });
}

int ActivityLauncher::stream_key(const Op& op)
{
  auto [it, fresh] = streams_.keys.try_emplace({op.device, op.stream}, static_cast<int>(streams_.keys.size()));
  return it->second;
}

DeviceRef ActivityLauncher::host_of(const DeviceRef& gpu) const
{
  return {DeviceKind::host, gpu.node, platform_.cluster().node.socket_of_gpu(gpu.index)};
}

DeviceRef ActivityLauncher::shadow_of(const DeviceRef& rep, const DeviceRef& peer, const DeviceRef& d) const
{
  const ClusterSpec& c = platform_.cluster();
  int delta            = peer.index - rep.index;
  switch (d.kind) {
    case DeviceKind::gpu: {
      // Ranks are numbered node by node: the partner of rank r + delta is the partner of
      // rank r plus delta, on the next node when it passes the last GPU of this one (a
      // stage of 12 ranks on nodes of 8 sends its ranks 4-11's traffic to two nodes).
      int64_t gpus   = static_cast<int64_t>(c.nodes) * c.gpus_per_node;
      int64_t global = (static_cast<int64_t>(d.node) * c.gpus_per_node + d.index + delta) % gpus;
      if (global < 0)
        global += gpus;
      return {DeviceKind::gpu, static_cast<int>(global / c.gpus_per_node), static_cast<int>(global % c.gpus_per_node)};
    }
    case DeviceKind::host:
      if (d.node == rep.node && d.index == c.node.socket_of_gpu(rep.index))
        return {DeviceKind::host, d.node, c.node.socket_of_gpu(peer.index)};
      return d;
    case DeviceKind::nvme: return d;
  }
  return d;
}

DeviceRef ActivityLauncher::copy_end_of(const Op& op, const DeviceRef& peer, const DeviceRef& d) const
{
  if (op.group < 0 || d.kind != DeviceKind::gpu)
    return shadow_of(op.device, peer, d);
  auto at = [](const std::vector<DeviceRef>& g, const DeviceRef& x) {
    return static_cast<size_t>(std::find(g.begin(), g.end(), x) - g.begin());
  };
  const std::vector<DeviceRef>& own    = dag_.group(op.group);
  const std::vector<DeviceRef>* theirs = at(own, peer) < own.size() ? &own : nullptr;
  for (const std::vector<DeviceRef>& other : dag_.concurrent_groups(op.group))
    if (!theirs && at(other, peer) < other.size())
      theirs = &other;
  size_t n = own.size(), from = at(own, op.device), to = at(own, d);
  if (!theirs || theirs->size() != n || from == n || to == n)
    return shadow_of(op.device, peer, d);
  return (*theirs)[(at(*theirs, peer) + to + n - from) % n];
}

void ActivityLauncher::for_each_route(const Op& op,
                                      const std::function<void(const DeviceRef&, const DeviceRef&)>& f) const
{
  switch (op.kind) {
    case OpKind::copy:
      f(op.src, op.dst);
      for (const DeviceRef& peer : dag_.shadows(op.device))
        f(copy_end_of(op, peer, op.src), copy_end_of(op, peer, op.dst));
      if (op.pageable) {
        const DeviceRef& host = op.src.kind == DeviceKind::host ? op.src : op.dst;
        f(host, host);
      }
      break;
    case OpKind::host_compute:
      if (op.seconds > 0) // a recorded stretch of host time: a delay, no DRAM
        break;
      f(op.device, op.device);
      for (const DeviceRef& peer : dag_.shadows(op.src)) {
        DeviceRef socket = shadow_of(op.src, peer, op.device);
        f(socket, socket);
      }
      break;
    case OpKind::kernel: // kernels of a GPU on two streams, or a copy through its HBM: streams_.shared_hbm
      if (op.seconds <= 0)
        f(op.device, op.device);
      break;
    case OpKind::chain:
      for (const Op& m : dag_.chain(op.chain))
        for_each_route(m, f);
      break;
    case OpKind::collective:
    case OpKind::alloc:
    case OpKind::free: break;
  }
}

void ActivityLauncher::start_kernel(OpId id, const Op& op)
{
  KernelTiming t = kernel_timer_(op, sg4::Engine::get_clock());
  kernel_timer_.power().started(op.device); // its device is busy until the Replayer says it ended
  if (op.seconds > 0) { // recorded (an imported trace): its time there, moved to this GPU; shares nothing
    start_delay(id, t.total_s(0));
    return;
  }
  sg4::Host* host = platform_.host(op.device);
  if (!streams_.shared_hbm.count(op.device)) {
    // Alone on its HBM: overhead + max(F/P, B/W) in one activity, the HBM link's bytes
    // and busy time accounted here (the same figures the flow would have produced).
    start_exec(id, host, t.total_s(op.bytes) * Platform::gpu_host_speed);
    account_hbm_alone(op, t);
    return;
  }
  // A kernel that streams below the HBM's rate on its own (decode attention's cache reads)
  // takes that long beside other streams too: its exec holds the time, the flow the
  // link's share.
  double own_s = t.kernel_paced ? std::max(t.compute_s, t.memory_s(op.bytes)) : t.compute_s;
  start_exec(id, host, (own_s + t.overhead_s) * Platform::gpu_host_speed);
  start_flow(id, op.device, op.device, op.bytes);
}

double ActivityLauncher::hbm_busy_s(const Op& op, const KernelTiming& t)
{
  if (op.bytes <= 0 || op.seconds > 0) // a measured op's bytes were moved where it was recorded
    return -1;
  return t.overhead_s + t.memory_s(op.bytes);
}

void ActivityLauncher::account_hbm_alone(const Op& op, const KernelTiming& t)
{
  double busy_s = hbm_busy_s(op, t);
  if (busy_s >= 0)
    account_hbm(hbm_route(op.device), op.bytes, busy_s);
}

void ActivityLauncher::account_hbm(int hbm_route, double bytes, double busy_s)
{
  for (int l : routes_.route(hbm_route).links)
    routes_.accounts().add(l, bytes, busy_s);
}

void ActivityLauncher::start_host_compute(OpId id, const DeviceRef& socket, const Op& op)
{
  if (op.seconds > 0) {
    start_delay(id, op.seconds);
    return;
  }
  start_exec(id, platform_.host(socket), op.flops);
  start_flow(id, socket, socket, op.bytes);
}

void ActivityLauncher::start_delay(OpId op, double seconds)
{
  sg4::Host* timer = platform_.timer(op == OpDag::none ? 0 : static_cast<size_t>(stream_key(chains_.current_op(op))));
  start_exec(op, timer, seconds * timer->get_speed());
}

void ActivityLauncher::add_activity(ReplayActivity a, sg4::Activity& handle)
{
  const size_t slot = slots_.add(std::move(a));
  handle.set_data(reinterpret_cast<void*>(static_cast<uintptr_t>(slot + 1))); // 0: none
}

void ActivityLauncher::start_exec(OpId op, sg4::Host* host, double work)
{
  sg4::ExecPtr e = sg4::Exec::init();
  e->set_flops_amount(work);
  e->set_host(host);
  add_activity({op, -1, e}, *e);
  if (op != OpDag::none) // OpDag::none: a source waiting for its next event
    ++index_.running_acts[op - index_.base];
  e->vetoable_start();
}

void ActivityLauncher::start_flow(OpId op, const DeviceRef& src, const DeviceRef& dst, double bytes, double payload)
{
  sg4::Host* from = platform_.host(src);
  sg4::Host* to   = platform_.host(dst);
  int r           = routes_.index(from, to);
  if (orbits_ && orbits_->role(r) == OrbitFold::Role::image)
    return; // its orbit's canonical image runs for it
  routes_.accounts().flow_started(routes_.route(r).links, bytes, sg4::Engine::get_clock());
  sg4::CommPtr c = sg4::Comm::sendto_init(from, to);
  c->set_payload_size(static_cast<uint64_t>((payload < 0 ? bytes : payload) + 0.5));
  add_activity({op, r, c}, *c);
  ++index_.running_acts[op - index_.base];
  c->vetoable_start();
}

int ActivityLauncher::hbm_route(const DeviceRef& gpu)
{
  size_t i = static_cast<size_t>(gpu.node) * platform_.cluster().gpus_per_node + static_cast<size_t>(gpu.index);
  if (i >= streams_.hbm_routes.size())
    streams_.hbm_routes.resize(i + 1, -1);
  if (streams_.hbm_routes[i] < 0) {
    sg4::Host* h           = platform_.host(gpu);
    streams_.hbm_routes[i] = routes_.index(h, h);
  }
  return streams_.hbm_routes[i];
}

} // namespace memwall

// The replay's collectives (CollectiveReplay.hpp).
#include "sim/replay/CollectiveReplay.hpp"
#include "sim/replay/RouteOpSet.hpp"
#include "sim/timing/CollectiveTiming.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>

namespace memwall {

CollectiveReplay::CollectiveReplay(const OpDag& dag, const Platform& platform, const std::string& algorithm, bool fold,
                                   bool paging, ActivityLauncher& launcher, ChainState& chains, OpIndex& index)
    : dag_(dag), platform_(platform), algorithm_(collective_registry().make(algorithm)), fold_on_(fold),
      paging_(paging), launcher_(launcher), chains_(chains), index_(index)
{}

const std::vector<int>& CollectiveReplay::flow_links(const Flow& f)
{
  return launcher_.routes().route(launcher_.route_of(f.src, f.dst)).links;
}

// A plan depends on the collective, its group and size, and on which of its flows can
// matter (fold_batch). It outlives its batch while those stay the same, and with them
// what its first private instance measured (a serving loop's iterations).
PlannedCollective& CollectiveReplay::planned(const Op& op)
{
  CollectiveKey key{op.group, op.collective, op.bytes};
  auto [it, fresh]     = plans_.try_emplace(key);
  PlannedCollective& p = it->second;
  if (!fresh && p.batch == batch_)
    return p;
  auto u = unfolded_.find(key);
  if (u == unfolded_.end())
    u = unfolded_.emplace(key, plan(op)).first;
  std::vector<CollectivePhase> phases = u->second;
  if (fold_on_)
    for (CollectivePhase& phase : phases) {
      std::vector<Flow> kept;
      for (const Flow& f : phase.flows)
        if (fold_.keeps(f, flow_links(f)))
          kept.push_back(f);
      phase.flows = std::move(kept);
    }
  if (fresh || !(phases == p.phases)) {
    p        = PlannedCollective{};
    p.phases = std::move(phases);
    for (const CollectivePhase& phase : p.phases)
      for (const Flow& f : phase.flows)
        for (int l : flow_links(f))
          p.links.push_back(l);
    std::sort(p.links.begin(), p.links.end());
    p.links.erase(std::unique(p.links.begin(), p.links.end()), p.links.end());
  }
  p.batch = batch_;
  return p;
}

void CollectiveReplay::fold_batch(size_t from, size_t to)
{
  // Every op of an earlier batch has ended: its plans are checked again when next used.
  ++batch_;
  unfolded_.clear();
  fold_ = FlowFold{};
  if (!fold_on_)
    return;
  // Where the replay runs something: the ops' devices and the ends of the routes their
  // own activities cross (copies, the shadow ranks' copies and host work), and under
  // unified memory every shadow rank with its host (their migrations run beside the
  // representative's).
  RouteOpSet watched_ops, routed_ops; // each pass learns nothing from a second op alike
  chains_.visit(from, to, [&](const Op& op) {
    if (!watched_ops.first(op))
      return;
    fold_.watch_device(op.device);
    launcher_.for_each_route(op, [&](const DeviceRef& a, const DeviceRef& b) {
      fold_.watch_device(a);
      fold_.watch_device(b);
    });
    if (paging_ && op.device.kind == DeviceKind::gpu) {
      fold_.watch_device(launcher_.host_of(op.device));
      for (const DeviceRef& peer : dag_.shadows(op.device)) {
        fold_.watch_device(peer);
        fold_.watch_device(launcher_.host_of(peer));
      }
    }
  });
  // The routes those run on (for_each_route, as coalescing claims them), then every flow; each
  // route once (a step's millions of kernels use a handful), and once more if watched.
  std::vector<uint8_t> added; // per route: 1 added, 2 added as watched
  auto add_route = [&](int route, bool watched) {
    if (static_cast<size_t>(route) >= added.size())
      added.resize(route + 1, 0);
    uint8_t want = watched ? 2 : 1;
    if (added[route] >= want)
      return;
    added[route] = want;
    fold_.add_links(launcher_.routes().route(route).links, watched);
  };
  auto watch_route = [&](const DeviceRef& a, const DeviceRef& b) { add_route(launcher_.route_of(a, b), true); };
  DeviceRef last_kernel_gpu{DeviceKind::nvme, -1, -1};
  chains_.visit(from, to, [&](const Op& op) {
    if (!routed_ops.first(op))
      return;
    if (op.kind == OpKind::collective) {
      CollectiveKey key{op.group, op.collective, op.bytes};
      if (!unfolded_.count(key)) {
        const auto& phases = unfolded_.emplace(key, plan(op)).first->second;
        for (const CollectivePhase& phase : phases)
          for (const Flow& f : phase.flows)
            add_route(launcher_.route_of(f.src, f.dst), fold_.touches(f));
      }
    } else if (op.kind != OpKind::kernel || !(op.device == last_kernel_gpu)) { // a GPU's kernels come in runs
      launcher_.for_each_route(op, watch_route);
    }
    if (op.kind == OpKind::kernel)
      last_kernel_gpu = op.device;
    if (paging_ && op.device.kind == DeviceKind::gpu) {
      watch_route(op.device, launcher_.host_of(op.device));
      watch_route(launcher_.host_of(op.device), op.device);
      for (const DeviceRef& peer : dag_.shadows(op.device)) {
        watch_route(peer, launcher_.host_of(peer));
        watch_route(launcher_.host_of(peer), peer);
      }
    }
  });
}

std::vector<CollectivePhase> CollectiveReplay::plan(const Op& op)
{
  CollectiveRequest req;
  req.kind           = op.collective;
  req.bytes          = op.bytes;
  req.switched_nodes = gpu_links(platform_.cluster().node.fabric);
  req.latency        = [this](const DeviceRef& a, const DeviceRef& b) {
    return launcher_.routes().route(launcher_.route_of(a, b)).latency;
  };
  req.links = [this](const DeviceRef& a, const DeviceRef& b) -> const std::vector<int>& {
    return launcher_.routes().route(launcher_.route_of(a, b)).links;
  };
  req.link_bandwidth                  = [this](int l) { return launcher_.routes().link(l)->get_bandwidth(); };
  req.fabric_link                     = [this](int l) { return platform_.is_fabric_link(launcher_.routes().link(l)); };
  req.cluster                         = &platform_.cluster();
  const std::vector<DeviceRef>& group = dag_.group(op.group);
  req.group                           = &group;
  std::vector<CollectivePhase> phases = algorithm_->plan(req);
  if (algorithm_->measured_inside_node(req))
    calibrate(op, group, phases);
  // The same collective of the shadow ranks' own groups, at the same time, each planned
  // and timed as its own (an uneven layout's group may span nodes where this one does
  // not): the k-th phase that moves bytes of theirs joins the k-th of this one, their
  // latencies run beside this one's.
  std::vector<size_t> moving;
  for (size_t i = 0; i < phases.size(); ++i)
    if (!phases[i].flows.empty())
      moving.push_back(i);
  for (const std::vector<DeviceRef>& other : dag_.concurrent_groups(op.group)) {
    req.group                          = &other;
    std::vector<CollectivePhase> extra = algorithm_->plan(req);
    if (algorithm_->measured_inside_node(req))
      calibrate(op, other, extra);
    size_t k = 0;
    for (const CollectivePhase& e : extra) {
      if (e.flows.empty())
        continue;
      if (moving.empty()) {
        moving.push_back(phases.size());
        phases.push_back({});
      }
      CollectivePhase& into = phases[moving[std::min(k++, moving.size() - 1)]];
      into.flows.insert(into.flows.end(), e.flows.begin(), e.flows.end());
    }
  }
  return phases;
}

void CollectiveReplay::calibrate(const Op& op, const std::vector<DeviceRef>& group,
                                 std::vector<CollectivePhase>& phases)
{
  const ClusterSpec& c = platform_.cluster();
  if (!gpu_links(c.node.fabric) || group.size() < 2)
    return;
  for (const DeviceRef& d : group)
    if (d.node != group.front().node)
      return; // across nodes the network, not the GPU's profile, sets the speed
  double hop = launcher_.routes().route(launcher_.route_of(group[0], group[1])).latency;
  CollectiveTiming t =
      nvlink_collective_timing(c.node.gpu, op.collective, static_cast<int>(group.size()), op.bytes, hop);
  for (CollectivePhase& p : phases)
    for (Flow& f : p.flows)
      f.bytes *= t.flow_scale;
  if (t.delay_s > 0)
    phases.insert(phases.begin(), CollectivePhase{{}, t.delay_s});
}

void CollectiveReplay::start(OpId id, const Op& op, bool measure)
{
  CollectiveRun& run = running_[id];
  run.plan           = &planned(op);
  if (measure && !run.plan->timed) {
    run.measure = true;
    run.start   = simgrid::s4u::Engine::get_clock();
    for (int l : run.plan->links) {
      run.bytes_before.push_back(launcher_.routes().accounts().bytes(l));
      run.busy_before.push_back(launcher_.routes().accounts().busy(l));
    }
  }
  start_phase(id);
}

bool CollectiveReplay::start_phase(OpId id)
{
  CollectiveRun& run = running_.at(id);
  while (run.next < run.plan->phases.size()) {
    const CollectivePhase& phase = run.plan->phases[run.next];
    if (++run.repeats_done >= phase.repeat) {
      ++run.next;
      run.repeats_done = 0;
    }
    for (const Flow& f : phase.flows)
      launcher_.start_flow(id, f.src, f.dst, f.bytes);
    if (phase.delay_s > 0)
      launcher_.start_delay(id, phase.delay_s);
    if (index_.running_acts[id - index_.base] > 0)
      return true;
  }
  if (run.measure)
    measure(run);
  running_.erase(id);
  return false;
}

// The first private instance of a collective, ended: what it took and what it put on
// each of its links (its stream alone used them meanwhile, so the deltas are its own).
void CollectiveReplay::measure(CollectiveRun& run)
{
  PlannedCollective& p = *run.plan;
  if (p.timed)
    return;
  p.timed    = true;
  p.duration = simgrid::s4u::Engine::get_clock() - run.start;
  p.link_bytes.resize(p.links.size());
  p.link_busy.resize(p.links.size());
  for (size_t i = 0; i < p.links.size(); ++i) {
    p.link_bytes[i] = launcher_.routes().accounts().bytes(p.links[i]) - run.bytes_before[i];
    p.link_busy[i]  = launcher_.routes().accounts().busy(p.links[i]) - run.busy_before[i];
  }
}

} // namespace memwall

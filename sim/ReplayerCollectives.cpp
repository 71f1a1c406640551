// The Replayer's collectives: planning a collective op into phases of flows (its
// algorithm, the shadow ranks' concurrent groups, NCCL's fitted speed inside a node, the
// flows left out because no replayed node can see them) and running the phases in turn.
#include "CollectiveTiming.hpp"
#include "ReplayedFlows.hpp"
#include "Replayer.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>

namespace memwall {

// Plans depend on the collective, its group and size, and which nodes are replayed (the
// flows kept); a workload that reaches new nodes gets new plans.
Replayer::PlannedCollective& Replayer::planned(const Op& op)
{
  if (planned_for_nodes_ != replayed_nodes_.size()) {
    plans_.clear();
    planned_for_nodes_ = replayed_nodes_.size();
  }
  auto [it, fresh] = plans_.try_emplace(CollectiveKey{op.group, op.collective, op.bytes});
  PlannedCollective& p = it->second;
  if (fresh) {
    p.phases = plan_collective(op);
    for (const CollectivePhase& phase : p.phases)
      for (const Flow& f : phase.flows)
        for (int l : routes_[route_index(platform_.host(f.src), platform_.host(f.dst))].links)
          p.links.push_back(l);
    std::sort(p.links.begin(), p.links.end());
    p.links.erase(std::unique(p.links.begin(), p.links.end()), p.links.end());
  }
  return p;
}

std::vector<CollectivePhase> Replayer::plan_collective(const Op& op)
{
  CollectiveRequest req;
  req.kind    = op.collective;
  req.bytes   = op.bytes;
  req.latency = [this](const DeviceRef& a, const DeviceRef& b) {
    return routes_[route_index(platform_.host(a), platform_.host(b))].latency;
  };
  const std::vector<DeviceRef>& group = dag_.group(op.group);
  req.group = &group;
  std::vector<CollectivePhase> phases = collective_->plan(req);
  // The same collective of the shadow ranks' own groups, at the same time; their flows
  // join the matching phases.
  for (const std::vector<DeviceRef>& other : dag_.concurrent_groups(op.group)) {
    req.group = &other;
    std::vector<CollectivePhase> extra = collective_->plan(req);
    for (size_t i = 0; i < extra.size() && i < phases.size(); ++i)
      phases[i].flows.insert(phases[i].flows.end(), extra[i].flows.begin(), extra[i].flows.end());
  }
  calibrate_collective(op, group, phases);
  if (options_.fold_collectives)
    fold_collective(phases);
  return phases;
}

void Replayer::calibrate_collective(const Op& op, const std::vector<DeviceRef>& group,
                                    std::vector<CollectivePhase>& phases)
{
  const ClusterSpec& c = platform_.cluster();
  if (c.node.fabric != GpuFabric::nvswitch || group.size() < 2)
    return;
  for (const DeviceRef& d : group)
    if (d.node != group.front().node)
      return; // across nodes the network, not the GPU's profile, sets the speed
  double hop = routes_[route_index(platform_.host(group[0]), platform_.host(group[1]))].latency;
  CollectiveTiming t =
      nvlink_collective_timing(c.node.gpu, op.collective, static_cast<int>(group.size()), op.bytes, hop);
  for (CollectivePhase& p : phases)
    for (Flow& f : p.flows)
      f.bytes *= t.flow_scale;
  if (t.delay_s > 0)
    phases.insert(phases.begin(), CollectivePhase{{}, t.delay_s});
}

void Replayer::fold_collective(std::vector<CollectivePhase>& phases)
{
  auto links_of = [this](const Flow& f) -> const std::vector<int>& {
    return routes_[route_index(platform_.host(f.src), platform_.host(f.dst))].links;
  };
  for (CollectivePhase& p : phases)
    keep_replayed_flows(p.flows, replayed_nodes_, links_of);
}

bool Replayer::start_collective_phase(OpId id)
{
  CollectiveRun& run = collectives_.at(id);
  while (run.next < run.plan->phases.size()) {
    const CollectivePhase& phase = run.plan->phases[run.next];
    if (++run.repeats_done >= phase.repeat) {
      ++run.next;
      run.repeats_done = 0;
    }
    for (const Flow& f : phase.flows)
      start_flow(id, f.src, f.dst, f.bytes);
    if (phase.delay_s > 0)
      start_exec(id, platform_.timer(), phase.delay_s * platform_.timer()->get_speed());
    if (running_acts_[id - base_] > 0)
      return true;
  }
  if (run.measure)
    measure_collective(run);
  collectives_.erase(id);
  return false;
}

// The first private instance of a collective, ended: what it took and what it put on
// each of its links (its stream alone used them meanwhile, so the deltas are its own).
void Replayer::measure_collective(CollectiveRun& run)
{
  PlannedCollective& p = *run.plan;
  if (p.timed)
    return;
  p.timed    = true;
  p.duration = simgrid::s4u::Engine::get_clock() - run.start;
  p.link_bytes.resize(p.links.size());
  p.link_busy.resize(p.links.size());
  for (size_t i = 0; i < p.links.size(); ++i) {
    p.link_bytes[i] = link_bytes_[p.links[i]] - run.bytes_before[i];
    p.link_busy[i]  = link_busy_[p.links[i]] - run.busy_before[i];
  }
}

} // namespace memwall

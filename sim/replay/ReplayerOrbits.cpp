// The Replayer's orbits (OrbitFold.hpp): before a replay of one batch, every flow it can
// start is named as an orbit's image or as foreign, once; then the canonical images run
// for their orbits, their shared links at 1/m capacity, and the links' figures are
// mirrored onto every link of their classes when the replay ends.
#include "sim/replay/Replayer.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace memwall {

DeviceRef Replayer::turned(const DeviceRef& gpu, int k) const
{
  int b    = mirror_.block;
  int base = gpu.index - gpu.index % b;
  return {DeviceKind::gpu, gpu.node, base + ((gpu.index - base + k) % b + b) % b};
}

// The routes of src -> dst turned by each rotation of its blocks, the image whose source
// is its block's first GPU first.
std::vector<int> Replayer::orbit_routes(const DeviceRef& src, const DeviceRef& dst)
{
  int b = mirror_.block;
  std::vector<int> routes(b);
  for (int k = 0; k < b; ++k) {
    int shift = k - src.index % b;
    routes[k] = route_of(turned(src, shift), turned(dst, shift));
  }
  return routes;
}

// A copy from a GPU and its shadows: an orbit when the flows it starts (Replayer::start)
// are exactly the turns of its own. False when they are not (its routes are foreign).
bool Replayer::add_copy_orbit(const Op& op)
{
  const std::vector<DeviceRef>& peers = dag_.shadows(op.device);
  bool gpus = op.src.kind == DeviceKind::gpu && op.dst.kind == DeviceKind::gpu && op.device.kind == DeviceKind::gpu;
  if (!gpus || static_cast<int>(peers.size()) + 1 != mirror_.block)
    return false;
  std::set<std::pair<DeviceRef, DeviceRef>> started{{op.src, op.dst}}, turns;
  for (const DeviceRef& peer : peers)
    started.emplace(shadow_of(op.device, peer, op.src), shadow_of(op.device, peer, op.dst));
  for (int k = 0; k < mirror_.block; ++k)
    turns.emplace(turned(op.src, k), turned(op.dst, k));
  if (started != turns)
    return false;
  mirror_.fold->add_orbit(orbit_routes(op.src, op.dst));
  return true;
}

// A phase's flows, grouped by their canonical image: an orbit where every offset in the
// source's block sends it equally often, foreign otherwise.
void Replayer::add_collective_orbits(const PlannedCollective& plan)
{
  int b = mirror_.block;
  for (const CollectivePhase& phase : plan.phases) {
    // (canonical source, canonical destination, bytes) -> count per source offset
    std::map<std::tuple<DeviceRef, DeviceRef, double>, std::vector<int>> by_canonical;
    for (const Flow& f : phase.flows) {
      if (f.src.kind != DeviceKind::gpu || f.dst.kind != DeviceKind::gpu) {
        mirror_.fold->add_foreign(route_of(f.src, f.dst));
        continue;
      }
      int offset = f.src.index % b;
      auto [it, fresh] =
          by_canonical.try_emplace({turned(f.src, -offset), turned(f.dst, -offset), f.bytes}, std::vector<int>(b, 0));
      ++it->second[offset];
    }
    for (const auto& [key, counts] : by_canonical) {
      std::vector<int> routes = orbit_routes(std::get<0>(key), std::get<1>(key));
      if (std::equal(counts.begin() + 1, counts.end(), counts.begin())) {
        mirror_.fold->add_orbit(routes);
        continue;
      }
      for (int k = 0; k < b; ++k)
        if (counts[k] > 0)
          mirror_.fold->add_foreign(routes[k]);
    }
  }
}

void Replayer::mirror_orbits()
{
  const ClusterSpec& c = platform_.cluster();
  // The block a rotation turns: a representative GPU and its shadows (tensor
  // parallelism over 8 GPUs of a DGX, or of a 72-GPU rack), aligned in the node.
  mirror_.block = 1;
  for (const auto& [d, peers] : dag_.all_shadows())
    mirror_.block = std::max(mirror_.block, static_cast<int>(peers.size()) + 1);
  // The rotation maps the platform onto itself: one NVSwitch port, PCIe link and NIC per
  // GPU (a shared PCIe switch or NIC, or host memory on the way, is not turned alike).
  bool symmetric = options_.mirror_orbits && !paging_on() && !drive_.source && mirror_.block > 1 &&
                   c.gpus_per_node % mirror_.block == 0 && c.gpus_per_node == c.node.gpus && gpu_links(c.node.fabric) &&
                   (c.nodes == 1 || c.node.nics == c.node.gpus);
  if (!symmetric)
    return;
  mirror_.fold =
      std::make_unique<OrbitFold>([this](int r) -> const std::vector<int>& { return routes_.route(r).links; });
  auto foreign = [this](const DeviceRef& a, const DeviceRef& b) { mirror_.fold->add_foreign(route_of(a, b)); };
  std::set<std::tuple<DeviceRef, DeviceRef, DeviceRef, bool>> copies; // each kind of copy once
  std::set<const PlannedCollective*> plans;
  DeviceRef last_kernel_gpu{DeviceKind::nvme, -1, -1};
  visit_ops(0, index_.taken, [&](const Op& op) {
    switch (op.kind) {
      case OpKind::copy:
        if (copies.emplace(op.device, op.src, op.dst, op.pageable).second && !add_copy_orbit(op))
          for_each_route(op, foreign);
        break;
      case OpKind::collective:
        if (const PlannedCollective* p = &planned(op); plans.insert(p).second)
          add_collective_orbits(*p);
        break;
      case OpKind::kernel: // a GPU's kernels come in runs and use its HBM alone
        if (!(op.device == last_kernel_gpu))
          for_each_route(op, foreign);
        last_kernel_gpu = op.device;
        break;
      default: for_each_route(op, foreign); break;
    }
  });
  mirror_.fold->solve();
  for (const OrbitFold::Scaled& s : mirror_.fold->scaled_links()) {
    simgrid::s4u::Link* link = routes_.link(s.link);
    mirror_.scaled_links.emplace_back(link, link->get_bandwidth());
    link->set_bandwidth(link->get_bandwidth() / s.multiplicity);
  }
}

bool Replayer::start_mirrored_copy(OpId id, const Op& op)
{
  if (!mirror_.fold || op.src.kind != DeviceKind::gpu || op.dst.kind != DeviceKind::gpu || op.pageable)
    return false;
  int offset    = op.src.index % mirror_.block;
  DeviceRef src = turned(op.src, -offset);
  DeviceRef dst = turned(op.dst, -offset);
  if (mirror_.fold->role(route_of(src, dst)) != OrbitFold::Role::canonical)
    return false;
  start_copy(id, op, src, dst);
  return true;
}

void Replayer::restore_links()
{
  for (auto& [link, bandwidth] : mirror_.scaled_links)
    link->set_bandwidth(bandwidth);
  mirror_.scaled_links.clear();
}

} // namespace memwall

// The replay's orbits (OrbitMirror.hpp).
#include "sim/replay/OrbitMirror.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace memwall {

DeviceRef OrbitMirror::turned(const DeviceRef& gpu, int k) const
{
  int b    = block_;
  int base = gpu.index - gpu.index % b;
  return {DeviceKind::gpu, gpu.node, base + ((gpu.index - base + k) % b + b) % b};
}

// The routes of src -> dst turned by each rotation of its blocks, the image whose source
// is its block's first GPU first.
std::vector<int> OrbitMirror::orbit_routes(const DeviceRef& src, const DeviceRef& dst)
{
  int b = block_;
  std::vector<int> routes(b);
  for (int k = 0; k < b; ++k) {
    int shift = k - src.index % b;
    routes[k] = launcher_.route_of(turned(src, shift), turned(dst, shift));
  }
  return routes;
}

// A copy from a GPU and its shadows: an orbit when the flows it starts (Replayer::start)
// are exactly the turns of its own. False when they are not (its routes are foreign).
bool OrbitMirror::add_copy_orbit(const Op& op)
{
  const std::vector<DeviceRef>& peers = dag_.shadows(op.device);
  bool gpus = op.src.kind == DeviceKind::gpu && op.dst.kind == DeviceKind::gpu && op.device.kind == DeviceKind::gpu;
  if (!gpus || static_cast<int>(peers.size()) + 1 != block_)
    return false;
  std::set<std::pair<DeviceRef, DeviceRef>> started{{op.src, op.dst}}, turns;
  for (const DeviceRef& peer : peers)
    started.emplace(launcher_.copy_end_of(op, peer, op.src), launcher_.copy_end_of(op, peer, op.dst));
  for (int k = 0; k < block_; ++k)
    turns.emplace(turned(op.src, k), turned(op.dst, k));
  if (started != turns)
    return false;
  fold_->add_orbit(orbit_routes(op.src, op.dst));
  return true;
}

// A phase's flows, grouped by their canonical image: an orbit where every offset in the
// source's block sends it equally often, foreign otherwise.
void OrbitMirror::add_collective_orbits(const PlannedCollective& plan)
{
  int b = block_;
  for (const CollectivePhase& phase : plan.phases) {
    // (canonical source, canonical destination, bytes) -> count per source offset
    std::map<std::tuple<DeviceRef, DeviceRef, double>, std::vector<int>> by_canonical;
    for (const Flow& f : phase.flows) {
      if (f.src.kind != DeviceKind::gpu || f.dst.kind != DeviceKind::gpu) {
        fold_->add_foreign(launcher_.route_of(f.src, f.dst));
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
        fold_->add_orbit(routes);
        continue;
      }
      for (int k = 0; k < b; ++k)
        if (counts[k] > 0)
          fold_->add_foreign(routes[k]);
    }
  }
}

void OrbitMirror::mirror(bool allowed, size_t taken)
{
  const ClusterSpec& c = platform_.cluster();
  // The block a rotation turns: a representative GPU and its shadows (tensor
  // parallelism over 8 GPUs of a DGX, or of a 72-GPU rack), aligned in the node.
  block_ = 1;
  for (const auto& [d, peers] : dag_.all_shadows())
    block_ = std::max(block_, static_cast<int>(peers.size()) + 1);
  // The rotation maps the platform onto itself: one NVSwitch port, PCIe link and NIC per
  // GPU (a shared PCIe switch or NIC, or host memory on the way, is not turned alike).
  bool symmetric = allowed && block_ > 1 && c.gpus_per_node % block_ == 0 && c.gpus_per_node == c.node.gpus &&
                   gpu_links(c.node.fabric) && (c.nodes == 1 || c.node.nics == c.node.gpus);
  if (!symmetric)
    return;
  fold_ = std::make_unique<OrbitFold>(
      [this](int r) -> const std::vector<int>& { return launcher_.routes().route(r).links; });
  auto foreign = [this](const DeviceRef& a, const DeviceRef& b) { fold_->add_foreign(launcher_.route_of(a, b)); };
  std::set<std::tuple<DeviceRef, DeviceRef, DeviceRef, bool>> copies; // each kind of copy once
  std::set<const PlannedCollective*> plans;
  DeviceRef last_kernel_gpu{DeviceKind::nvme, -1, -1};
  chains_.visit(0, taken, [&](const Op& op) {
    switch (op.kind) {
      case OpKind::copy:
        if (copies.emplace(op.device, op.src, op.dst, op.pageable).second && !add_copy_orbit(op))
          launcher_.for_each_route(op, foreign);
        break;
      case OpKind::collective:
        if (const PlannedCollective* p = &collectives_.planned(op); plans.insert(p).second)
          add_collective_orbits(*p);
        break;
      case OpKind::kernel: // a GPU's kernels come in runs and use its HBM alone
        if (!(op.device == last_kernel_gpu))
          launcher_.for_each_route(op, foreign);
        last_kernel_gpu = op.device;
        break;
      default: launcher_.for_each_route(op, foreign); break;
    }
  });
  fold_->solve();
  for (const OrbitFold::Scaled& s : fold_->scaled_links()) {
    simgrid::s4u::Link* link = launcher_.routes().link(s.link);
    scaled_links_.emplace_back(link, link->get_bandwidth());
    link->set_bandwidth(link->get_bandwidth() / s.multiplicity);
  }
  launcher_.use_orbits(fold_.get());
}

bool OrbitMirror::start_copy(OpId id, const Op& op)
{
  if (!fold_ || op.src.kind != DeviceKind::gpu || op.dst.kind != DeviceKind::gpu || op.pageable)
    return false;
  int offset    = op.src.index % block_;
  DeviceRef src = turned(op.src, -offset);
  DeviceRef dst = turned(op.dst, -offset);
  if (fold_->role(launcher_.route_of(src, dst)) != OrbitFold::Role::canonical)
    return false;
  launcher_.start_copy(id, op, src, dst);
  return true;
}

void OrbitMirror::restore_links()
{
  for (auto& [link, bandwidth] : scaled_links_)
    link->set_bandwidth(bandwidth);
  scaled_links_.clear();
}

void OrbitMirror::mirror_figures()
{
  if (fold_)
    fold_->mirror(launcher_.routes().accounts().all_bytes(), launcher_.routes().accounts().all_busy());
}

} // namespace memwall

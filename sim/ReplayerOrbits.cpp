// The Replayer's orbits (OrbitFold.hpp): before a replay of one batch, every flow it can
// start is named as an orbit's image or as foreign, once; then the canonical images run
// for their orbits, their shared links at 1/m capacity, and the links' figures are
// mirrored onto every link of their classes when the replay ends.
#include "Replayer.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace memwall {

bool Replayer::has_full_shadows(const DeviceRef& d) const
{
  int n = platform_.cluster().gpus_per_node;
  if (d.kind != DeviceKind::gpu)
    return false;
  const std::vector<DeviceRef>& peers = dag_.shadows(d);
  if (static_cast<int>(peers.size()) != n - 1)
    return false;
  std::vector<uint8_t> seen(n, 0);
  seen[d.index] = 1;
  for (const DeviceRef& p : peers) {
    if (p.kind != DeviceKind::gpu || p.index < 0 || p.index >= n || seen[p.index])
      return false;
    seen[p.index] = 1;
  }
  return true;
}

// The routes of src -> dst turned by each rotation of the GPU indices, the image whose
// source is GPU 0 first.
std::vector<int> Replayer::orbit_routes(const DeviceRef& src, const DeviceRef& dst)
{
  int n = platform_.cluster().gpus_per_node;
  std::vector<int> routes(n);
  for (int k = 0; k < n; ++k) {
    int shift = n - src.index + k;
    DeviceRef a{DeviceKind::gpu, src.node, (src.index + shift) % n};
    DeviceRef b{DeviceKind::gpu, dst.node, (dst.index + shift) % n};
    routes[k] = route_index(platform_.host(a), platform_.host(b));
  }
  return routes;
}

// A phase's flows, grouped by their canonical image: an orbit where every source GPU
// index sends it equally often, foreign otherwise.
void Replayer::add_collective_orbits(const PlannedCollective& plan)
{
  int n = platform_.cluster().gpus_per_node;
  for (const CollectivePhase& phase : plan.phases) {
    std::map<std::tuple<int, DeviceRef, double>, std::vector<int>> by_canonical; // -> count per source index
    for (const Flow& f : phase.flows) {
      if (f.src.kind != DeviceKind::gpu || f.dst.kind != DeviceKind::gpu) {
        orbits_->add_foreign(route_index(platform_.host(f.src), platform_.host(f.dst)));
        continue;
      }
      DeviceRef dst{DeviceKind::gpu, f.dst.node, ((f.dst.index - f.src.index) % n + n) % n};
      auto [it, fresh] = by_canonical.try_emplace({f.src.node, dst, f.bytes}, std::vector<int>(n, 0));
      ++it->second[f.src.index];
    }
    for (const auto& [key, counts] : by_canonical) {
      DeviceRef src{DeviceKind::gpu, std::get<0>(key), 0};
      const DeviceRef& dst = std::get<1>(key);
      std::vector<int> routes = orbit_routes(src, dst);
      if (std::equal(counts.begin() + 1, counts.end(), counts.begin())) {
        orbits_->add_orbit(routes);
        continue;
      }
      for (int k = 0; k < n; ++k)
        if (counts[k] > 0)
          orbits_->add_foreign(routes[k]);
    }
  }
}

void Replayer::mirror_orbits()
{
  const ClusterSpec& c = platform_.cluster();
  // The rotation maps the platform onto itself: one NVSwitch port, PCIe link and NIC per
  // GPU (a shared PCIe switch or NIC, or host memory on the way, is not turned alike).
  bool symmetric = options_.mirror_orbits && !paging_on() && !source_ && c.gpus_per_node > 1 &&
                   c.gpus_per_node == c.node.gpus && c.node.fabric == GpuFabric::nvswitch &&
                   (c.nodes == 1 || c.node.nics == c.node.gpus);
  if (!symmetric)
    return;
  orbits_ = std::make_unique<OrbitFold>([this](int r) -> const std::vector<int>& { return routes_[r].links; });
  auto foreign = [&](const DeviceRef& a, const DeviceRef& b) {
    orbits_->add_foreign(route_index(platform_.host(a), platform_.host(b)));
  };
  std::set<std::pair<DeviceRef, DeviceRef>> copies;
  std::set<const PlannedCollective*> plans;
  DeviceRef last_kernel_gpu{DeviceKind::nvme, -1, -1};
  visit_ops(0, taken_, [&](const Op& op) {
    switch (op.kind) {
      case OpKind::copy:
        if (op.src.kind == DeviceKind::gpu && op.dst.kind == DeviceKind::gpu && has_full_shadows(op.device)) {
          if (copies.emplace(op.src, op.dst).second)
            orbits_->add_orbit(orbit_routes(op.src, op.dst));
        } else {
          for_each_route(op, foreign);
        }
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
  orbits_->solve();
  for (const OrbitFold::Scaled& s : orbits_->scaled_links()) {
    simgrid::s4u::Link* link = links_[s.link];
    scaled_links_.emplace_back(link, link->get_bandwidth());
    link->set_bandwidth(link->get_bandwidth() / s.multiplicity);
  }
}

bool Replayer::start_mirrored_copy(OpId id, const Op& op)
{
  if (!orbits_ || op.src.kind != DeviceKind::gpu || op.dst.kind != DeviceKind::gpu || op.pageable)
    return false;
  int n = platform_.cluster().gpus_per_node;
  DeviceRef src{DeviceKind::gpu, op.src.node, 0};
  DeviceRef dst{DeviceKind::gpu, op.dst.node, ((op.dst.index - op.src.index) % n + n) % n};
  if (orbits_->role(route_index(platform_.host(src), platform_.host(dst))) != OrbitFold::Role::canonical)
    return false;
  start_copy(id, op, src, dst);
  return true;
}

void Replayer::restore_links()
{
  for (auto& [link, bandwidth] : scaled_links_)
    link->set_bandwidth(bandwidth);
  scaled_links_.clear();
}

} // namespace memwall

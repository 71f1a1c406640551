#pragma once
// How the replay turns an op into SimGrid activities (DESIGN.md §3):
//
//   kernel       = Exec of (F / (peak x eff) + overhead) on the GPU host
//                  beside a GPU->same-GPU flow of its bytes over the HBM link (latency =
//                  overhead), so it lasts overhead + max(F/P, B/W) alone and shares
//                  compute and bandwidth fairly with concurrent kernels and copies;
//                  alone on its HBM, one Exec with the link's figures accounted here;
//   host_compute = the same on a CPU socket and its DRAM link;
//   copy         = one flow over the route between the two memories
//                  (ActivityLauncherCopies.cpp), a pageable copy's staging beside it;
//   a delay      = an Exec on a timer host, which shares nothing.
//
// It keeps the activities in flight (ActivitySlots), the routes and what their links
// carried (RouteTable), and maps a shadow rank's traffic onto its own devices. Each
// activity started counts against its op in OpIndex::running_acts.
#include "sim/platform/Platform.hpp"
#include "sim/replay/ActivitySlots.hpp"
#include "sim/replay/ChainState.hpp"
#include "sim/replay/OpIndex.hpp"
#include "sim/replay/RouteTable.hpp"
#include "sim/replay/StreamFacts.hpp"
#include "sim/timing/KernelTimer.hpp"
#include "workloads/dag/OpDag.hpp"

#include <functional>

namespace memwall {

class OrbitFold;
struct KernelTiming;

class ActivityLauncher {
public:
  ActivityLauncher(const OpDag& dag, const Platform& platform, OpIndex& index, ChainState& chains,
                   const GpuSpec* recorded_on);

  // Ops [from, to) taken: which GPUs have HBM shared by concurrent kernels.
  void note_streams(size_t from, size_t to);
  bool shares_hbm(const DeviceRef& gpu) const { return streams_.shared_hbm.count(gpu) > 0; }
  // A number per (device, stream): coalescing's owner of a link, a delay's timer.
  int stream_key(const Op& op);

  // Where a shadow rank's traffic goes: `d` as seen from `peer` instead of `rep` (a GPU
  // as many ranks on from `d` as `peer` is from `rep`, ranks numbered node by node).
  DeviceRef shadow_of(const DeviceRef& rep, const DeviceRef& peer, const DeviceRef& d) const;
  // An end of a shadow rank's copy: for a copy within a group (Op::group: a userbuffers
  // transfer to the tp ring neighbour) the member of the peer's own group at the same
  // offset from the peer as `d` from the representative; otherwise shadow_of.
  DeviceRef copy_end_of(const Op& op, const DeviceRef& peer, const DeviceRef& d) const;
  DeviceRef host_of(const DeviceRef& gpu) const; // the socket the GPU hangs off
  // Every route an op's own activities cross, collectives' flows aside: a copy's (and
  // its shadow ranks'), a pageable copy's pass through host DRAM, host work's DRAM (and
  // its shadows'), a kernel's HBM. What coalescing claims per stream and what flow
  // folding watches.
  void for_each_route(const Op& op, const std::function<void(const DeviceRef&, const DeviceRef&)>& f) const;
  int route_of(const DeviceRef& src, const DeviceRef& dst)
  {
    return routes_.index(platform_.host(src), platform_.host(dst));
  }

  void start_kernel(OpId id, const Op& op);
  void start_copy(OpId id, const Op& op, const DeviceRef& src, const DeviceRef& dst);
  void start_host_compute(OpId id, const DeviceRef& socket, const Op& op);
  // `payload`: what the flow transfers in time, when it differs from the bytes it
  // accounts to the links (default: the bytes). A flow its orbit's image runs for
  // (OrbitFold) starts nothing.
  void start_flow(OpId op, const DeviceRef& src, const DeviceRef& dst, double bytes, double payload = -1);
  void start_delay(OpId op, double seconds); // on the timer of the op's stream: shares nothing
  void start_exec(OpId op, simgrid::s4u::Host* host, double work);

  // What the kernel's flow would have kept its HBM link busy for, -1 when it accounts
  // nothing there (no bytes, or measured where it was recorded).
  static double hbm_busy_s(const Op& op, const KernelTiming& t);
  void account_hbm(int hbm_route, double bytes, double busy_s);
  int hbm_route(const DeviceRef& gpu); // the route of the GPU's HBM link, found once

  KernelTimer& kernel_timer() { return kernel_timer_; }
  RouteTable& routes() { return routes_; }
  const RouteTable& routes() const { return routes_; }
  ActivitySlots& slots() { return slots_; }
  // The orbits mirrored in this batch (null: every flow runs).
  void use_orbits(const OrbitFold* fold) { orbits_ = fold; }

private:
  // Keeps a started activity in a free slot; its handle carries the slot.
  void add_activity(ReplayActivity a, simgrid::s4u::Activity& handle);
  // A kernel alone on its HBM runs as one Exec: its bytes and busy time on the HBM link
  // are added here, the figures its flow would have produced.
  void account_hbm_alone(const Op& op, const KernelTiming& t);
  // ActivityLauncherCopies.cpp
  double copy_payload(const Op& op, const DeviceRef& src, const DeviceRef& dst);
  double measured_payload(int route, double bytes, double latency_s, double bandwidth) const;

  const OpDag& dag_;
  const Platform& platform_;
  OpIndex& index_;
  ChainState& chains_;
  KernelTimer kernel_timer_;
  ActivitySlots slots_;
  RouteTable routes_;
  StreamFacts streams_;
  const OrbitFold* orbits_ = nullptr;
};

} // namespace memwall

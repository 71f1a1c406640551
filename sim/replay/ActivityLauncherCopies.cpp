// How the replay runs a copy (ActivityLauncher.hpp): one flow over the route between its two
// memories, at the links' rates or, where the GPU's fitted profile measured such copies,
// at the measured speed; a pageable copy's driver staging beside it.
#include "sim/replay/ActivityLauncher.hpp"

#include "sim/timing/CollectiveTiming.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>

namespace memwall {

// A measured copy of `bytes` taking latency + bytes / bandwidth alone: the payload that
// keeps the route's narrowest link busy that long. SimGrid adds the route's latency
// itself; the rest of the measured latency rides on the payload at that link's rate.
// Under contention the copy still shares its links.
double ActivityLauncher::measured_payload(int route, double bytes, double latency_s, double bandwidth) const
{
  const RouteTable::Route& r = routes_.route(route);
  double narrowest           = 0;
  for (int l : r.links) {
    double bw = routes_.link(l)->get_bandwidth();
    narrowest = narrowest > 0 ? std::min(narrowest, bw) : bw;
  }
  if (narrowest <= 0 || bandwidth <= 0)
    return -1;
  return bytes * narrowest / bandwidth + std::max(0.0, latency_s - r.latency) * narrowest;
}

// A pipeline send between two GPUs of one NVSwitch node is an NCCL send/recv (Megatron's
// p2p communication): where the GPU's profile holds the measured send_recv curve of two
// ranks in a node, the flow carries as many bytes as keep the NVLink port busy for the
// fitted time, latency + bytes / bandwidth of the size's regime (never above line rate,
// as for collectives). A host copy or another copy between two GPUs of a node takes the
// profile's copy curve of its kind (h2d_pinned, d2h_pageable, peer, ...), as
// memwall-gpubench measures them. -1: no curve, the links' rates. The copy's link bytes
// stay the bytes it moves.
double ActivityLauncher::copy_payload(const Op& op, const DeviceRef& src, const DeviceRef& dst)
{
  const ClusterSpec& c = platform_.cluster();
  const GpuProfile* p  = c.node.gpu.profile.get();
  if (!p || op.bytes <= 0)
    return -1;
  bool gpus = src.kind == DeviceKind::gpu && dst.kind == DeviceKind::gpu && src.node == dst.node;
  // A pipeline send, or a userbuffers transfer between a tp group's GPUs: NCCL's measured
  // send/receive between two GPUs of the node.
  if (gpus && (op.stream == StreamKind::p2p || op.stream == StreamKind::tp_comm)) {
    if (!gpu_links(c.node.fabric))
      return -1;
    int route          = route_of(src, dst);
    double hop         = routes_.route(route).latency;
    CollectiveTiming t = nvlink_collective_timing(c.node.gpu, CollectiveKind::send_recv, 2, op.bytes, hop);
    if (t.flow_scale == 1 && t.delay_s == 0)
      return -1;
    return measured_payload(route, op.bytes, hop + t.delay_s, c.node.gpu.nvlink_bw / t.flow_scale);
  }
  bool h2d         = src.kind == DeviceKind::host && dst.kind == DeviceKind::gpu;
  bool d2h         = src.kind == DeviceKind::gpu && dst.kind == DeviceKind::host;
  const char* kind = h2d    ? (op.pageable ? "h2d_pageable" : "h2d_pinned")
                     : d2h  ? (op.pageable ? "d2h_pageable" : "d2h_pinned")
                     : gpus ? "peer"
                            : nullptr;
  auto it          = kind ? p->copies.find(kind) : p->copies.end();
  if (it == p->copies.end() || it->second.empty())
    return -1;
  const Regime& r = it->second.regime(op.bytes);
  return measured_payload(route_of(src, dst), op.bytes, r.latency_s, r.bandwidth);
}

// A pageable copy is the DMA over the link plus, pipelined with it, the driver's memcpy
// between pageable memory and its pinned staging buffer: one CPU thread at the node's
// pageable_copy_bw, reading and writing the socket's DRAM (two more passes over it). The
// copy ends when the slowest of the three does. A measured pageable curve holds the
// staging already: then only the DRAM passes run beside it.
void ActivityLauncher::start_copy(OpId id, const Op& op, const DeviceRef& src, const DeviceRef& dst)
{
  double payload = copy_payload(op, src, dst);
  start_flow(id, src, dst, op.bytes, payload);
  bool host_gpu = (src.kind == DeviceKind::host && dst.kind == DeviceKind::gpu) ||
                  (src.kind == DeviceKind::gpu && dst.kind == DeviceKind::host);
  if (!op.pageable || !host_gpu || op.bytes <= 0)
    return;
  const DeviceRef& host = src.kind == DeviceKind::host ? src : dst;
  if (payload < 0)
    start_delay(id, op.bytes / platform_.cluster().node.pageable_copy_bw);
  start_flow(id, host, host, 2 * op.bytes);
}

} // namespace memwall

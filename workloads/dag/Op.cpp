#include "workloads/dag/Op.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {

GemmShape gemm_shape(double m, double n, double k, double groups)
{
  auto dim = [](double v, double max) { return static_cast<uint32_t>(std::clamp(std::round(v), 0.0, max)); };
  GemmShape s;
  s.m               = dim(m, 4.0e9);
  s.n               = dim(n, 4.0e9);
  s.k               = dim(k, 16777215.0) & 0xFFFFFFu;
  s.groups_less_one = (dim(groups, 256.0) - (groups >= 1 ? 1u : 0u)) & 0xFFu;
  return s;
}

const char* op_kind_name(OpKind k)
{
  switch (k) {
    case OpKind::kernel: return "kernel";
    case OpKind::copy: return "copy";
    case OpKind::collective: return "collective";
    case OpKind::host_compute: return "host_compute";
    case OpKind::alloc: return "alloc";
    case OpKind::free: return "free";
    case OpKind::chain: return "chain";
  }
  return "?";
}

bool same_work(const Op& a, const Op& b)
{
  return a.flops == b.flops && a.model_flops == b.model_flops && a.bytes == b.bytes && a.seconds == b.seconds &&
         a.name == b.name && a.device == b.device && a.src == b.src && a.dst == b.dst && a.pool == b.pool &&
         a.shape.m == b.shape.m && a.shape.n == b.shape.n && a.shape.k == b.shape.k &&
         a.shape.groups() == b.shape.groups() && a.group == b.group && a.chain == b.chain && a.kind == b.kind &&
         a.stream == b.stream && a.phase == b.phase && a.kclass == b.kclass && a.family == b.family &&
         a.dtype == b.dtype && a.pageable == b.pageable && a.pass == b.pass && a.host_paced == b.host_paced &&
         a.collective == b.collective && a.category == b.category;
}

const char* stream_name(StreamKind s)
{
  switch (s) {
    case StreamKind::compute: return "compute";
    case StreamKind::h2d: return "h2d";
    case StreamKind::d2h: return "d2h";
    case StreamKind::comm: return "comm";
    case StreamKind::host: return "host";
    case StreamKind::p2p: return "p2p";
    case StreamKind::gather: return "gather";
    case StreamKind::tp_comm: return "tp_comm";
  }
  return "?";
}

const char* phase_name(StepPhase p)
{
  switch (p) {
    case StepPhase::setup: return "setup";
    case StepPhase::forward: return "forward";
    case StepPhase::backward: return "backward";
    case StepPhase::optimizer: return "optimizer";
    case StepPhase::serving: return "serving";
  }
  return "?";
}

Op copy_op(const DeviceRef& issuer, StreamKind stream, const DeviceRef& src, const DeviceRef& dst, double bytes,
           OpName name)
{
  Op op;
  op.kind   = OpKind::copy;
  op.stream = stream;
  op.device = issuer;
  op.src    = src;
  op.dst    = dst;
  op.bytes  = bytes;
  op.name   = name;
  return op;
}

Op host_copy_op(const DeviceRef& issuer, StreamKind stream, const DeviceRef& src, const DeviceRef& dst, double bytes,
                OpName name, bool pinned)
{
  Op op       = copy_op(issuer, stream, src, dst, bytes, name);
  op.pageable = !pinned;
  return op;
}

Op host_delay_op(const DeviceRef& device, double seconds, OpName name)
{
  Op op;
  op.kind    = OpKind::host_compute;
  op.stream  = StreamKind::host;
  op.device  = device;
  op.seconds = seconds;
  op.name    = name;
  return op;
}

Op kernel_op(const DeviceRef& gpu, KernelClass kclass, Dtype dtype, double flops, double bytes, double model_flops,
             OpName name)
{
  Op op;
  op.kind        = OpKind::kernel;
  op.stream      = StreamKind::compute;
  op.device      = gpu;
  op.kclass      = kclass;
  op.dtype       = dtype;
  op.flops       = flops;
  op.bytes       = bytes;
  op.model_flops = model_flops;
  op.name        = name;
  return op;
}

Op collective_op(const DeviceRef& issuer, StreamKind stream, CollectiveKind kind, int32_t group, double bytes,
                 OpName name)
{
  Op op;
  op.kind       = OpKind::collective;
  op.stream     = stream;
  op.device     = issuer;
  op.collective = kind;
  op.group      = group;
  op.bytes      = bytes;
  op.name       = name;
  return op;
}

const char* collective_name(CollectiveKind k)
{
  switch (k) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::send_recv: return "send_recv";
  }
  return "?";
}

} // namespace memwall

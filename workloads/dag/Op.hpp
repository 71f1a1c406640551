#pragma once
// One node of the op DAG (DESIGN.md §2). An op runs on one stream of one device;
// ops on a stream run in issue order; other orderings are explicit edges.
#include "hwmodels/DeviceRef.hpp"
#include "hwmodels/kernel/Dtype.hpp"
#include "hwmodels/kernel/GemmPass.hpp"
#include "hwmodels/kernel/KernelFamily.hpp"
#include "workloads/dag/OpName.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace memwall {

// chain: a run of one stream's ops stored once and repeated (OpDag::end_capture), such
// as a pipeline stage's forward of one micro-batch; the op stands for its members in order.
enum class OpKind : uint8_t { kernel, copy, collective, host_compute, alloc, free, chain };
// p2p: pipeline sends; gather: ZeRO-3 parameter all-gathers (their own CUDA streams).
// tp_comm: Transformer Engine's userbuffers streams, a tp collective hidden behind a GEMM
// (TpOverlap).
enum class StreamKind : uint8_t { compute, h2d, d2h, comm, host, p2p, gather, tp_comm };
// other: a recorded kernel (an imported trace) whose name says neither; timed as
// memory-bound, and counted apart.
enum class KernelClass : uint8_t { gemm, attention, elementwise, other };
// The part of a step an op belongs to, for timelines and plots (the replay ignores it).
enum class StepPhase : uint8_t { setup, forward, backward, optimizer, serving };
enum class CollectiveKind : uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };

// Every byte of memory belongs to exactly one category.
enum class MemCategory : uint8_t { weights, gradients, optimizer, activations, kv_cache, workspace, context, other };
constexpr size_t mem_category_count = 8;

inline const std::array<const char*, mem_category_count>& mem_category_names()
{
  static const std::array<const char*, mem_category_count> names{"weights",  "gradients", "optimizer", "activations",
                                                                 "kv_cache", "workspace", "context",   "other"};
  return names;
}
inline const char* mem_category_name(MemCategory c) { return mem_category_names()[static_cast<size_t>(c)]; }

const char* op_kind_name(OpKind k);
const char* stream_name(StreamKind s);
const char* collective_name(CollectiveKind k);
const char* phase_name(StepPhase p);

// The main GEMM of a kernel (C[m x n] = A[m x k] B[k x n]); all 0 when not a GEMM.
// A calibrated profile times GEMMs by shape; the op's flops may cover several GEMMs of
// about this shape (a backward's input and weight gradients). A grouped GEMM (the
// experts of an MoE layer) runs `groups` GEMMs of this shape in one launch, their
// tiles scheduled together. Packed into 12 bytes (Op's size): k below 2^24 (a width's
// limit is 10^7), up to 256 groups (more are counted as 256).
struct GemmShape {
  uint32_t m = 0, n = 0;
  uint32_t k : 24              = 0;
  uint32_t groups_less_one : 8 = 0;
  bool known() const { return m > 0 && n > 0 && k > 0; }
  uint32_t groups() const { return groups_less_one + 1u; }
};
static_assert(sizeof(GemmShape) == 12);
GemmShape gemm_shape(double m, double n, double k, double groups = 1);

// Fields ordered by size, so that the ops of a large step pack without padding (120
// bytes, not 144). Repeated passes are stored once (OpDag chains), so the 1T step holds
// 138,018 of them, not 4.4 M.
struct Op {
  // kernel / host_compute
  double flops       = 0;
  double model_flops = 0; // part of `flops` that counts toward MFU (recomputation does not)
  // kernel / host_compute: memory traffic; copy / collective / alloc / free: size
  double bytes = 0;
  // kernel / host_compute: the time it took where it was recorded (an imported trace),
  // run as it is; 0 when the hardware models time the op.
  double seconds = 0;
  OpName name; // "L3.fwd.qkv", "ddp.bucket2.allreduce", ...

  DeviceRef device;     // where the op is issued (its stream's device)
  DeviceRef src, dst;   // copy
  DeviceRef pool;       // alloc / free: memory that holds the tensor
  GemmShape shape;      // kernel of class gemm: its GEMM's shape
  int32_t group   = -1; // collective, or a copy between members of a group: index into OpDag::group()
  uint32_t tensor = 0;  // alloc / free: pairs a free with its alloc
  uint32_t chain  = 0;  // chain: its members, OpDag::chain(chain)

  OpKind kind        = OpKind::kernel;
  StreamKind stream  = StreamKind::compute;
  StepPhase phase    = StepPhase::setup;  // stamped by OpDag::add from its current phase
  KernelClass kclass = KernelClass::gemm; // kernel / host_compute
  Dtype dtype        = Dtype::bf16;
  // Four small fields share a byte, so that Op stays at 120 bytes.
  KernelFamily family : 4 = KernelFamily::generic; // elementwise kernel: which fitted curve times it
  bool pageable : 1       = false; // copy: host side not pinned, staged through the driver's pinned buffer
  // gemm kernel: which GEMMs of its layer it runs (`shape` is always the forward's);
  // backward: the input and the weight gradient.
  GemmPass pass : 2 = GemmPass::forward;
  // kernel: launched by a host slower than the GPU (an eager decode), so the stream idles
  // between kernels on the host's time: the kernel holds the GPU for its own time only,
  // without the gap between back-to-back launches (GpuProfile::launch_gap_s).
  bool host_paced : 1       = false;
  CollectiveKind collective = CollectiveKind::all_reduce;
  MemCategory category      = MemCategory::other; // alloc / free
};

static_assert(sizeof(Op) <= 120, "Op grew: a serving iteration or an unrepeated step holds millions");

// The same work: every field but the tensor id (an alloc's or free's id differs in each
// repetition of a chain, and only unified memory's paging reads it).
bool same_work(const Op& a, const Op& b);

// A kernel's use of part of a tensor: the bytes [offset, offset + bytes) of tensor
// `tensor` (an OpDag::alloc id), read or written. Unified memory faults on the pages a
// kernel touches, so the replay needs them; explicit memory does not.
struct TensorAccess {
  uint32_t tensor = 0;
  double offset   = 0;
  double bytes    = 0;
  bool write      = false;
};

// A stretch of host time on the host stream of `device` (a delay: no DRAM traffic).
Op host_delay_op(const DeviceRef& device, double seconds, OpName name);

// A copy of `bytes` from one memory to another, issued on `stream` of `issuer`.
Op copy_op(const DeviceRef& issuer, StreamKind stream, const DeviceRef& src, const DeviceRef& dst, double bytes,
           OpName name);
// A copy between host memory and a GPU: from pinned memory a DMA, else staged through
// the driver's pinned buffer (pageable).
Op host_copy_op(const DeviceRef& issuer, StreamKind stream, const DeviceRef& src, const DeviceRef& dst, double bytes,
                OpName name, bool pinned);
// A kernel on the compute stream of `gpu`: `flops` at `dtype` on the units of `kclass`,
// `bytes` of HBM traffic; `model_flops` of them count toward MFU.
Op kernel_op(const DeviceRef& gpu, KernelClass kclass, Dtype dtype, double flops, double bytes, double model_flops,
             OpName name);
// A collective of `kind` over group `group` of an OpDag, issued on `stream` of `issuer`.
Op collective_op(const DeviceRef& issuer, StreamKind stream, CollectiveKind kind, int32_t group, double bytes,
                 OpName name);

} // namespace memwall

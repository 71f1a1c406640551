// BlockPasses' tp collectives hidden behind GEMMs, as Transformer Engine's userbuffers
// run them under Megatron-Core's --tp-comm-overlap (TpOverlap; TE v2.2
// comm_gemm_overlap.cpp, calibration/research/megatron-core-overlaps.md section 1.4).
// The GEMM is split into chunks on the compute stream; userbuffers moves the data on
// streams of its own (StreamKind::tp_comm) with copy engines or a few SMs, GPU to GPU
// over NVLink: each transfer is a copy from this GPU to its tp ring neighbour of the
// bytes its NVLink port carries (an all-gather or reduce-scatter of B over t ranks:
// (t-1)/t B a port; a ring-exchange step: B/t), timed as NCCL's measured send/receive
// between two GPUs. What the replay then gives: ring exchange, the first chunk's GEMM
// beside the first transfer and every later chunk after its data arrives; pipeline, each
// chunk's reduce-scatter beside the next chunk's GEMM, the last one exposed; bulk, the
// whole collective beside the other backward GEMM. A GEMM beside communication kernels
// that hold `comm_sms` of the GPU's SMs (TE's set_sm_margin) runs on the others: its
// work counts sms / (sms - comm_sms) times (model FLOPs unchanged). Not modelled: the
// userbuffers' memory, HBM traffic of the transfers beside the GEMM.
#include "workloads/training/BlockPasses.hpp"

#include <algorithm>

namespace memwall {

const OpName& BlockPasses::part_name(int b, size_t i, UbPart part, int chunk)
{
  const uint64_t key = (static_cast<uint64_t>(b) << 40) | (static_cast<uint64_t>(i) << 20) |
                       (static_cast<uint64_t>(part) << 12) | static_cast<uint64_t>(chunk + 1);
  auto [it, fresh] = part_names_.try_emplace(key);
  if (fresh) {
    static const char* parts[] = {"fwd.ub_send",       "fwd.ub_gemm",       "fwd.ub_reduce_scatter",
                                  "bwd.ub_send",       "bwd.ub_dgrad",      "bwd.wgrad",
                                  "bwd.ub_all_gather", "bwd.dgrad",         "bwd.ub_reduce_scatter",
                                  "recompute.ub_send", "recompute.ub_gemm", "recompute.ub_reduce_scatter"};
    it->second                 = OpName(step_.blocks[b].plan.name + "." + step_.blocks[b].plan.kernels[i].name + "." +
                                        parts[static_cast<size_t>(part)] + (chunk >= 0 ? std::to_string(chunk) : ""));
  }
  return it->second;
}

Op BlockPasses::gemm_part(const DeviceRef& gpu, const KernelPlan& k, bool forward, GemmPass pass, int chunks,
                          OpName name, int comm_sms, bool recompute)
{
  double flops = k.fwd_flops, bytes = k.fwd_bytes, model = recompute ? 0.0 : k.fwd_flops;
  if (!forward) { // one of the backward's GEMMs (both: its input and weight gradient), each half of the work
    double share = k.bwd_pass == GemmPass::backward && pass != GemmPass::backward ? 0.5 : 1.0;
    flops        = k.bwd_flops * share;
    bytes        = k.bwd_bytes * share;
    model        = k.bwd_model_flops * share;
  }
  const int sms = step_.cluster.node.gpu.sms;
  double margin = comm_sms > 0 && sms > comm_sms ? static_cast<double>(sms) / (sms - comm_sms) : 1.0;
  Op op = kernel_op(gpu, k.kclass, k.dtype, flops * margin / chunks, bytes / chunks, model / chunks, std::move(name));
  op.shape   = k.shape;
  op.shape.m = std::max<uint32_t>(1, k.shape.m / static_cast<uint32_t>(chunks));
  op.family  = k.family;
  if (!forward)
    op.pass = pass;
  return op;
}

DeviceRef BlockPasses::tp_neighbour(const StepStage& s)
{
  const std::vector<DeviceRef>& g = step_.dag.group(s.tp_group);
  auto at                         = std::find(g.begin(), g.end(), s.gpu);
  return at == g.end() ? g[1 % g.size()] : g[static_cast<size_t>(at - g.begin() + 1) % g.size()];
}

OpId BlockPasses::send(const StepStage& s, double bytes, const OpName& name)
{
  Op op    = copy_op(s.gpu, StreamKind::tp_comm, s.gpu, tp_neighbour(s), bytes, name);
  op.group = s.tp_group; // every rank sends to its own neighbour in its group (ActivityLauncher::copy_end_of)
  return step_.dag.add(std::move(op));
}

OpId BlockPasses::ring_exchange(int b, size_t i, double bytes, bool forward, GemmPass pass, OpId params, bool recompute)
{
  // TE's split_overlap_ag: t steps; at step j the GEMM runs on chunk j (its own at j = 0)
  // while chunk j + 1 comes from the neighbour.
  const StepStage& s  = step_.stage_of(b);
  const KernelPlan& k = step_.blocks[b].plan.kernels[i];
  const int t         = static_cast<int>(step_.dag.group(s.tp_group).size());
  OpId arrived = 0, first = OpDag::none;
  for (int j = 0; j < t; ++j) {
    OpId sent = 0;
    if (j + 1 < t) {
      sent = send(s, bytes / t,
                  part_name(b, i,
                            recompute ? UbPart::rc_send
                            : forward ? UbPart::fwd_send
                                      : UbPart::bwd_send,
                            j));
      if (j == 0) // this GPU's own share, once the compute stream has it (after whatever the
                  // stream waited for: a pipeline stage's incoming gradient included); later
                  // steps forward what the last one received (the userbuffers stream's order)
        step_.dag.depend(sent, step_.dag.stream_tail(s.gpu, StreamKind::compute));
    }
    OpId id = compute(gemm_part(s.gpu, k, forward, pass, t,
                                part_name(b, i,
                                          recompute ? UbPart::rc_gemm
                                          : forward ? UbPart::fwd_gemm
                                                    : UbPart::bwd_dgrad_chunk,
                                          j),
                                0, recompute));
    step_.dag.depend(id, params);
    if (arrived)
      step_.dag.depend(id, arrived);
    arrived = sent;
    if (j == 0)
      first = id;
  }
  return first;
}

OpId BlockPasses::ring_exchange_forward(int b, size_t i, const TpComm& c, OpId params, bool recompute)
{
  return ring_exchange(b, i, c.bytes, true, GemmPass::forward, params, recompute);
}

OpId BlockPasses::pipelined_forward(int b, size_t i, OpId params, bool recompute)
{
  // TE's split_overlap_rs (pipeline): the GEMM in `splits` chunks, each chunk's
  // reduce-scatter on the userbuffers stream as soon as the chunk is done; the stream
  // after the GEMM waits for the last one.
  const StepStage& s  = step_.stage_of(b);
  const KernelPlan& k = step_.blocks[b].plan.kernels[i];
  const TpComm& c     = k.fwd_after;
  const double t      = static_cast<double>(step_.dag.group(s.tp_group).size());
  OpId first = OpDag::none, rs = 0;
  for (int j = 0; j < c.splits; ++j) {
    OpId id =
        compute(gemm_part(s.gpu, k, true, GemmPass::forward, c.splits,
                          part_name(b, i, recompute ? UbPart::rc_gemm : UbPart::fwd_gemm, j), c.comm_sms, recompute));
    step_.dag.depend(id, params);
    rs = send(s, (t - 1) / t * c.bytes / c.splits,
              part_name(b, i, recompute ? UbPart::rc_reduce_scatter : UbPart::fwd_reduce_scatter, j));
    step_.dag.depend(rs, id);
    if (j == 0)
      first = id;
  }
  tails_[s.gpu].joins.push_back(rs);
  return first;
}

OpId BlockPasses::overlapped_backward(int b, size_t i, OpId params)
{
  const StepStage& s        = step_.stage_of(b);
  const KernelPlan& k       = step_.blocks[b].plan.kernels[i];
  const double t            = static_cast<double>(step_.dag.group(s.tp_group).size());
  const bool wgrad          = k.bwd_pass == GemmPass::backward; // frozen weights: the input gradient only
  const GemmPass dgrad_pass = wgrad ? GemmPass::input_grad : k.bwd_pass;
  if (k.bwd_before.overlap == TpOverlap::ring_exchange) {
    // A row-parallel layer (proj_dgrad, fc2_dgrad): the output gradient gathered by ring
    // exchange beside the input-gradient GEMM's chunks; the weight gradient after it.
    OpId first = ring_exchange(b, i, k.bwd_before.bytes, false, dgrad_pass, params);
    if (wgrad)
      step_.dag.depend(
          compute(gemm_part(s.gpu, k, false, GemmPass::weight_grad, 1, part_name(b, i, UbPart::bwd_wgrad, -1))),
          params);
    tp_collective(b, i, Role::bwd_tp, k.bwd_after);
    return first;
  }
  // A column-parallel layer (qkv_dgrad / qkv_wgrad, fc1_dgrad / fc1_wgrad): the input's
  // all-gather beside the input-gradient GEMM, the input gradient's reduce-scatter beside
  // the weight-gradient GEMM. Frozen weights (no weight gradient) need no gathered input.
  OpId gather = 0;
  if (wgrad) {
    gather = send(s, (t - 1) / t * k.bwd_before.bytes, part_name(b, i, UbPart::bwd_all_gather, -1));
    step_.dag.depend(gather, step_.dag.stream_tail(s.gpu, StreamKind::compute));
  }
  OpId dgrad =
      compute(gemm_part(s.gpu, k, false, dgrad_pass, 1, part_name(b, i, UbPart::bwd_dgrad, -1), k.bwd_before.comm_sms));
  step_.dag.depend(dgrad, params);
  if (wgrad) {
    OpId w = compute(gemm_part(s.gpu, k, false, GemmPass::weight_grad, 1, part_name(b, i, UbPart::bwd_wgrad, -1),
                               k.bwd_after.overlap == TpOverlap::bulk ? k.bwd_after.comm_sms : 0));
    step_.dag.depend(w, params);
    step_.dag.depend(w, gather);
  }
  if (k.bwd_after.overlap == TpOverlap::bulk) {
    OpId rs = send(s, (t - 1) / t * k.bwd_after.bytes, part_name(b, i, UbPart::bwd_reduce_scatter, -1));
    step_.dag.depend(rs, dgrad);
    tails_[s.gpu].joins.push_back(rs);
  } else {
    tp_collective(b, i, Role::bwd_tp, k.bwd_after);
  }
  return dgrad;
}

} // namespace memwall

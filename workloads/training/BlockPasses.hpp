#pragma once
// One block's forward, recompute and backward in one micro-batch: its kernels in the
// stack's order on the compute stream, the tensor-parallel collectives between them
// (BlockKernels), what it saves for backward or recomputes (SavedActivations, kept in
// SavedTensors), waiting for ZeRO-3's gathered parameters (ParamGather) and handing its
// gradients to GradientSync.
#include "workloads/training/GradientSync.hpp"
#include "workloads/training/ParamGather.hpp"
#include "workloads/training/SavedTensors.hpp"
#include "workloads/training/StepBuild.hpp"
#include "workloads/training/TensorTouches.hpp"

#include <array>
#include <map>
#include <unordered_map>
#include <vector>

namespace memwall {

class BlockPasses {
public:
  BlockPasses(StepBuild& step, ParamGather& gathers, GradientSync& grads, TensorTouches& touches, SavedTensors& saved)
      : step_(step), gathers_(gathers), grads_(grads), touches_(touches), saved_(saved), names_(step.blocks.size()),
        host_(step.stack ? step.stack->eager_host() : EagerHost{})
  {}

  void forward(int b, int64_t mb);
  void backward(int b, int64_t mb);

private:
  // The ops a block's kernel i gives rise to, each with its own name.
  enum class Role : uint8_t {
    fwd,
    fwd_saved,
    fwd_tp,
    rc,
    rc_saved,
    rc_tp,
    bwd,
    bwd_tp_in,
    bwd_tp,
    bwd_free_saved,
    bwd_free_regenerated,
    fwd_held,
    free_held,
    fwd_out,
    free_out,
    bwd_grad,
    bwd_free_grad
  };
  void recompute(int b, int64_t mb, OpId params); // what SavedActivations says the backward brings back
  OpId kernel(const DeviceRef& gpu, const OpName& name, const KernelPlan& k, bool forward, bool recompute);
  // Kernel i's forward (with `recompute`, its rerun in backward) beside the tp collectives
  // overlapped with it: fed chunk by chunk by the ring exchange the GPU's tail holds, or
  // pipelined into its reduce-scatter; plain otherwise. Returns its first compute op.
  OpId forward_kernel(int b, size_t i, OpId params, bool recompute);
  // Kernel i's tp collective after its forward: a ring exchange left for the next GEMM,
  // else run now unless the kernel's own overlap ran it.
  void forward_collective(int b, size_t i, bool recompute);
  // A compute-stream op, after the overlapped collectives the stream must wait for.
  OpId compute(Op op);
  // An eager host's launch of the GPU's next kernel (forward: a Python forward, a
  // recomputed one too; else autograd's): its time after the host's previous launch;
  // OpDag::none where the stack's host keeps ahead.
  OpId launch(const DeviceRef& gpu, bool forward, int kernels, const KernelPlan& k);

  // Overlapped tp collectives (TpOverlap; TpOverlapPasses.cpp). A part of a GEMM kernel:
  // `pass`'s share of its work, split into `chunks` along the tokens.
  // A recomputed forward's part counts no model FLOPs.
  Op gemm_part(const DeviceRef& gpu, const KernelPlan& k, bool forward, GemmPass pass, int chunks, OpName name,
               int comm_sms = 0, bool recompute = false);
  // The GPU's next rank in its tp group: where userbuffers sends a chunk.
  DeviceRef tp_neighbour(const StepStage& s);
  OpId send(const StepStage& s, double bytes, const OpName& name);
  // Forward of block b's kernel i (a GEMM) with the all-gather `c` before it by ring
  // exchange, or with the reduce-scatter after it pipelined.
  // Both return the first compute op (the one the kernel's memory touches go to); with
  // `recompute`, the forward again in backward (its parts named and counted as such).
  OpId ring_exchange_forward(int b, size_t i, const TpComm& c, OpId params, bool recompute = false);
  OpId pipelined_forward(int b, size_t i, OpId params, bool recompute = false);
  // Backward of block b's kernel i with its overlapped collectives.
  OpId overlapped_backward(int b, size_t i, OpId params);
  // TE's ring exchange of `bytes` (the gathered tensor) beside the tp chunks of kernel i's
  // forward GEMM or its backward's `pass`; returns the first chunk.
  OpId ring_exchange(int b, size_t i, double bytes, bool forward, GemmPass pass, OpId params, bool recompute = false);
  // The parts of a kernel's overlapped work, named "<block>.<kernel>.<part><chunk>".
  enum class UbPart : uint8_t {
    fwd_send,
    fwd_gemm,
    fwd_reduce_scatter,
    bwd_send,
    bwd_dgrad_chunk,
    bwd_wgrad,
    bwd_all_gather,
    bwd_dgrad,
    bwd_reduce_scatter,
    rc_send,
    rc_gemm,
    rc_reduce_scatter
  };
  // The name of `part` (chunk `chunk`, -1: none) of kernel i's overlapped work, made once:
  // looked up per micro-batch by a packed key, no string built.
  const OpName& part_name(int b, size_t i, UbPart part, int chunk);
  // Block b's kernel i's tp collective in `role`, if it has one.
  void tp_collective(int b, size_t i, Role role, const TpComm& c);
  const OpName& name(int b, size_t i, Role role);

  StepBuild& step_;
  ParamGather& gathers_;
  GradientSync& grads_;
  TensorTouches& touches_;
  SavedTensors& saved_;
  // Per block, its kernels' op names by role, made on first use: every micro-batch
  // reuses them instead of building and interning the same strings again.
  std::vector<std::vector<std::array<OpName, 17>>> names_;
  std::unordered_map<uint64_t, OpName> part_names_;
  // Per GPU (the stages' blocks interleave under pipeline schedules): the overlapped
  // collectives its next compute op waits for, its compute stream's last op (what a
  // userbuffers send waits for), a ring-exchanged all-gather for its next GEMM's forward.
  struct ComputeTail {
    std::vector<OpId> joins;
    OpId last                = OpDag::none;
    const TpComm* ring_ahead = nullptr;
  };
  std::map<DeviceRef, ComputeTail> tails_;
  EagerHost host_;
  // Per GPU and micro-batch: what its forward holds until the model's forward returns
  // (KernelPlan::forward_held_bytes), with the (block, kernel) that allocated it.
  struct Held {
    Tensor tensor;
    int block;
    size_t kernel;
  };
  std::map<std::pair<DeviceRef, int64_t>, std::vector<Held>> held_;
};

} // namespace memwall

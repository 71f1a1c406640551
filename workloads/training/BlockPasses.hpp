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
#include <vector>

namespace memwall {

class BlockPasses {
public:
  BlockPasses(StepBuild& step, ParamGather& gathers, GradientSync& grads, TensorTouches& touches, SavedTensors& saved)
      : step_(step), gathers_(gathers), grads_(grads), touches_(touches), saved_(saved), names_(step.blocks.size())
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
    bwd_free_regenerated
  };
  void recompute(int b, int64_t mb); // what SavedActivations says the backward brings back
  OpId kernel(const DeviceRef& gpu, const OpName& name, const KernelPlan& k, bool forward, bool recompute);
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
  std::vector<std::vector<std::array<OpName, 11>>> names_;
};

} // namespace memwall

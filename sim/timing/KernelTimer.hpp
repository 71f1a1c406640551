#pragma once
// kernel_timing for the ops of one replay, each distinct kernel worked out once: a step
// of millions of kernels holds a few hundred distinct ones (the same GEMMs in every
// micro-batch), and a fitted GEMM model costs a table walk and a pow per call.
#include "sim/timing/KernelTiming.hpp"
#include "sim/timing/PowerGovernor.hpp"

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>

namespace memwall {

class KernelTimer {
public:
  explicit KernelTimer(GpuSpec gpu) : gpu_(std::move(gpu)), power_(gpu_) {}
  // Kernels with a recorded time (Op::seconds) were recorded on `recorded_on`: moved to
  // `gpu` by recorded_kernel_timing. Without it they run as recorded.
  KernelTimer(GpuSpec gpu, const GpuSpec* recorded_on)
      : gpu_(std::move(gpu)), recorded_on_(recorded_on ? std::make_unique<GpuSpec>(*recorded_on) : nullptr),
        power_(gpu_)
  {}
  // By value: the table may be cleared by the next call. A tensor-core kernel's compute
  // time is its full-clock time held back by the GPU's power limit (PowerGovernor), from
  // the kernels timed on its device before it and its idle time between them: call once
  // per kernel, in replay order, with the simulated time it starts at (without: right
  // after its device's last kernel).
  KernelTiming operator()(const Op& op, double start_s = PowerGovernor::back_to_back)
  {
    return held(op, full_clock(op), start_s);
  }
  // The two halves: the table's timing at full clock (no state), and `full` held back by
  // the power limit, noting the kernel in its device's window (once per kernel run).
  KernelTiming full_clock(const Op& op);
  KernelTiming held(const Op& op, KernelTiming full, double start_s = PowerGovernor::back_to_back);
  PowerGovernor& power() { return power_; }

private:
  // What kernel_timing reads of an op.
  struct Key {
    double flops = 0, bytes = 0, seconds = 0;
    GemmShape shape;
    KernelClass kclass  = KernelClass::gemm;
    KernelFamily family = KernelFamily::generic;
    Dtype dtype         = Dtype::bf16;
    GemmPass pass       = GemmPass::forward;
    bool host_paced     = false;
    bool operator==(const Key& o) const
    {
      return flops == o.flops && bytes == o.bytes && seconds == o.seconds && shape.m == o.shape.m &&
             shape.n == o.shape.n && shape.k == o.shape.k && shape.groups() == o.shape.groups() && kclass == o.kclass &&
             family == o.family && dtype == o.dtype && pass == o.pass && host_paced == o.host_paced;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  GpuSpec gpu_; // a copy: the timer may outlive the spec it was made from
  std::unique_ptr<GpuSpec> recorded_on_;
  PowerGovernor power_;
  std::unordered_map<Key, KernelTiming, KeyHash> known_;
  static constexpr size_t max_known = 1 << 16;
};

} // namespace memwall

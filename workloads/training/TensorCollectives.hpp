#pragma once
// One collective over a tensor (or a bucket of them) as the stack issues it, for ZeRO-3
// tensor by tensor (TrainingStack::tensor_calls): the parameter gathers (ParamGather)
// and the gradient reductions (GradientSync) of a stack whose blocks list their tensors
// call it alike.
// With per_parameter_collectives (DeepSpeed 0.3-0.4, PyTorch <= 1.9) every call also
// costs what building its lists costs: torch.zeros of the gathered tensor and
// torch.cuda.synchronize(), a Python narrow() per rank, and ProcessGroupNCCL's copy of
// each rank's part out of (all-gather) or into (reduce-scatter) a flat buffer, issued
// by the host one by one. The host's time is a delay on the rank's host stream; the
// device waits for it where the code synchronises.
#include "workloads/training/StepBuild.hpp"

#include <string>

namespace memwall {

class TensorCollectives {
public:
  explicit TensorCollectives(StepBuild& step) : step_(step), calls_(step.stack->tensor_calls()) {}

  // A call's name, "L3.use41.t2.all_gather": numbered, so that uses add none to the table.
  struct CallName {
    std::string prefix;
    uint64_t number = 0;
    std::string suffix;
  };
  // One collective of `kind` over the stage's dp group on `stream`, after `after`;
  // returns the op the tensor is ready after.
  OpId issue(const StepStage& s, StreamKind stream, CollectiveKind kind, double bytes, const CallName& call,
             OpId after);
  const TensorCalls& calls() const { return calls_; }

private:
  StepBuild& step_;
  TensorCalls calls_;
};

} // namespace memwall

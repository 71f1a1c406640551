#pragma once
// Eager PyTorch ops as the kernels they launch, forward and backward, and what autograd
// keeps for backward: the pieces the `pytorch` stack builds Hugging Face modules from
// (impl/HfModules.cpp).
//
// An op's forward kernels run in order; its backward kernels run in the order given, when
// backward reaches the op. EagerOps appends both to a block's kernel list (forward
// order, BlockKernels.hpp) so that the generator's forward walk meets the forward
// kernels and its reverse walk the backward ones, each in its order: the op's backward
// kernels go first, reversed, each with no forward part, then its forward kernels, each
// with no backward part (a GEMM keeps forward and backward in one entry).
//
// Bytes are what each kernel reads plus writes, from its implementation in ATen (a
// TensorIterator kernel reads each input once and writes its output; the reductions and
// softmaxes say where they read more); `saved` is what autograd holds from the forward
// kernel that makes it until the op's backward has run.
#include "workloads/training/blocks/BlockKernels.hpp"

#include <set>
#include <string>
#include <vector>

namespace memwall {

struct EagerKernel {
  std::string name;
  double bytes        = 0;
  double flops        = 0;
  KernelFamily family = KernelFamily::generic;
  bool accumulates    = false; // KernelPlan::accumulates
};

class EagerOps {
public:
  explicit EagerOps(std::vector<KernelPlan>& out) : out_(out) {}
  // An op: its forward kernels (the last one keeps `saved` bytes of `category`) and its
  // backward kernels in the order they run.
  void op(const std::vector<EagerKernel>& forward, const std::vector<EagerKernel>& backward, double saved = 0,
          MemCategory category = MemCategory::activations);
  // The last forward kernel also allocates `bytes` that live until the model's forward
  // returns (KernelPlan::forward_held_bytes).
  void hold_until_forward_returns(double bytes) { out_.back().forward_held_bytes += bytes; }
  // The last entry's output (`bytes`) is read by the next kernel alone, then dropped
  // (KernelPlan::out_bytes).
  void output_read_once(double bytes) { out_.back().out_bytes += bytes; }
  // The last op's backward writes its input's gradient (`bytes`), alive until the op
  // before it that has a backward has run its own: the one that reads it
  // (KernelPlan::grad_bytes). For a chain of ops each feeding the next.
  void gradient_to_previous_op(double bytes);
  // A GEMM (mm under autocast) of tokens x in -> tokens x out in `dtype`, keeping nothing
  // of its own (its inputs are other ops' saved tensors); backward its input and weight
  // gradients (GemmPass::backward), or the input gradient alone for a weight without grad.
  void gemm(const std::string& name, double tokens, double in, double out, Dtype dtype, bool weight_grad = true,
            double saved = 0);
  // One pass of such a GEMM alone: its forward (no backward), or its input or weight
  // gradient (no forward): where an op launches its GEMMs' passes in loops of their own.
  void gemm_pass(const std::string& name, double tokens, double in, double out, Dtype dtype, GemmPass pass);
  // The entry added last (to mark how an eager host launches it).
  KernelPlan& back() { return out_.back(); }
  // Whether the block's tensor `name` is kept for the first time: an input several ops
  // save for backward (q's, k's and v's adapters reading one norm output) is kept once.
  bool keep_once(const std::string& name) { return kept_.insert(name).second; }
  // An attention kernel of `flops` forward (the backward's by flash attention's count:
  // 2.5x, of which 2x are model FLOPs) reading and writing `bytes`, keeping `saved`; its
  // backward preceded and followed by memory-bound helper kernels (cuDNN's).
  void attention(const std::string& name, double flops, double bytes, double saved, Dtype dtype,
                 const std::vector<EagerKernel>& backward_before, const std::vector<EagerKernel>& backward_after);

private:
  // An op with a backward was added: its entries from `first`, the one whose backward
  // runs first at `runs_first`.
  void added(size_t first, size_t runs_first);
  // gemm's entry, not yet marked as an op (gemm_pass marks the passes with a backward).
  KernelPlan& push_gemm(const std::string& name, double tokens, double in, double out, Dtype dtype, bool weight_grad,
                        double saved);

  std::vector<KernelPlan>& out_;
  std::set<std::string> kept_; // keep_once
  static constexpr size_t none = static_cast<size_t>(-1);
  size_t last_first_ = none, last_runs_first_ = none, previous_first_ = none;
};

} // namespace memwall

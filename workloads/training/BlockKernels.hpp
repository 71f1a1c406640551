#pragma once
// The kernels of the blocks a training step is made of (embedding, transformer layer,
// head), each with its forward and backward FLOPs and HBM bytes and the activation
// bytes it saves for backward. Saved tensors follow Korthikanti et al. 2022, §4.1:
// with 16-bit activations, flash off and dropout on, a GPT layer saves
// sbh(34 + 5as/h) bytes; every term below is named after the tensor it stores.
#include "ModelSpec.hpp"
#include "Op.hpp"

#include <string>
#include <vector>

namespace memwall {

struct KernelPlan {
  std::string name;
  KernelClass kclass = KernelClass::gemm;
  double fwd_flops   = 0;
  double fwd_bytes   = 0;
  double bwd_flops   = 0;
  double bwd_model_flops = 0; // part of bwd_flops counted as model FLOPs
  double bwd_bytes   = 0;
  double saved_bytes = 0;     // activations kept from this kernel's forward to its backward
};

struct BlockPlan {
  std::string name;                // "embed", "L0", ..., "head"
  double params = 0;               // trainable parameters owned by the block
  std::vector<KernelPlan> kernels; // forward order
  double backward_workspace = 0;   // activation gradients alive during the block's backward
};

struct StepShape {
  int64_t micro_batch = 1;
  int64_t seq_len     = 1;
  double act_bytes    = 2; // bytes per activation element (2 for bf16/fp16, 4 for fp32)
  double weight_bytes = 2; // bytes per weight element used by kernels
  bool flash          = true;
};

BlockPlan embedding_block(const ModelSpec& m, const StepShape& s);
BlockPlan transformer_layer_block(const ModelSpec& m, const StepShape& s, int64_t layer);
BlockPlan head_block(const ModelSpec& m, const StepShape& s);

} // namespace memwall

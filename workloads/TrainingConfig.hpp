#pragma once
// The `training` section: batch shape, precision, optimizer and data parallelism.
// Issue-3 parallelism (tp, pp, ZeRO, recompute, offload) extends this struct.
#include "Dtype.hpp"
#include "ParamReader.hpp"

#include <cstdint>
#include <string>

namespace memwall {

enum class Optimizer { adam, sgd };

struct TrainingConfig {
  int64_t seq_len      = 1024;
  int64_t global_batch = 8;  // sequences per optimizer step, all replicas together
  int64_t micro_batch  = 1;  // sequences per forward/backward pass on one replica
  int64_t dp           = 1;  // data-parallel replicas
  Dtype precision      = Dtype::bf16; // compute dtype; bf16/fp16 imply fp32 master weights
  Optimizer optimizer  = Optimizer::adam;
  bool flash_attention = true;
  double bucket_bytes  = 25.0 * 1024 * 1024; // DDP gradient bucket (PyTorch default 25 MiB)
  bool overlap_grad_reduce = true;

  bool mixed_precision() const { return precision != Dtype::fp32; }
  int64_t micro_batches() const { return global_batch / (micro_batch * dp); }
  double tokens_per_step() const { return static_cast<double>(global_batch) * static_cast<double>(seq_len); }
};

// `gpus` is the number of GPUs the hardware section provides; dp defaults to it.
TrainingConfig read_training_section(ParamReader& r, int64_t gpus, int64_t max_seq_len);

} // namespace memwall

#include "TrainingConfig.hpp"

namespace memwall {

TrainingConfig read_training_section(ParamReader& r, int64_t gpus, int64_t max_seq_len)
{
  TrainingConfig t;
  t.seq_len      = r.integer("seq_len", t.seq_len, "tokens per sequence", 1);
  t.global_batch = r.integer("global_batch", t.global_batch, "sequences per optimizer step (all replicas)", 1);
  t.micro_batch  = r.integer("micro_batch", t.micro_batch, "sequences per forward/backward pass on one GPU", 1);
  t.dp           = r.integer("dp", gpus, "data-parallel replicas; default: all GPUs", 1);
  std::string p  = r.choice("precision", "bf16", {"fp32", "bf16", "fp16"},
                            "compute precision; bf16/fp16 keep fp32 master weights in the optimizer");
  t.precision    = *dtype_from_name(p);
  std::string o  = r.choice("optimizer", "adam", {"adam", "sgd"}, "adam (2 fp32 states) or sgd with momentum (1)");
  t.optimizer    = o == "adam" ? Optimizer::adam : Optimizer::sgd;
  t.flash_attention = r.flag("flash_attention", t.flash_attention,
                             "fused attention; off stores the s x s scores, softmax and dropout mask");
  t.bucket_bytes = r.quantity("bucket_bytes", QuantityKind::bytes, t.bucket_bytes, "DDP gradient bucket size");
  t.overlap_grad_reduce = r.flag("overlap_grad_reduce", t.overlap_grad_reduce,
                                 "all-reduce gradient buckets during backward (DDP) instead of after it");
  if (t.seq_len > max_seq_len)
    r.fail("seq_len", std::to_string(t.seq_len) + " exceeds the model's max_seq_len " + std::to_string(max_seq_len));
  if (gpus % t.dp != 0)
    r.fail("dp", "dp = " + std::to_string(t.dp) + " does not divide the " + std::to_string(gpus) + " GPUs");
  if (t.dp != gpus)
    r.fail("dp", "dp = " + std::to_string(t.dp) + " must equal the " + std::to_string(gpus) +
                     " GPUs (tensor and pipeline parallelism are not available yet)");
  if (t.bucket_bytes <= 0)
    r.fail("bucket_bytes", "must be positive");
  if (t.global_batch % (t.micro_batch * t.dp) != 0)
    r.fail("global_batch", "global_batch " + std::to_string(t.global_batch) + " is not a multiple of micro_batch x dp = " +
                               std::to_string(t.micro_batch * t.dp));
  r.finish();
  return t;
}

} // namespace memwall

#pragma once
// Families of memory-bound (elementwise) kernels. One latency + bandwidth curve does not
// fit them all: measured on the same A100 (Vidur's Llama-2 kernels), a residual add
// streams at ~1.8 TB/s, the SiLU-and-multiply at ~1.0, rotary embeddings at ~0.9 and
// RMSNorm at ~0.7 TB/s over the bytes they read and write. A fitted profile holds a curve
// per family it has measurements of; a kernel of another family, or of none, takes the
// profile's curve over all memory-bound kernels.
#include <cstdint>
#include <string>
#include <vector>

namespace memwall {

// generic: no family of its own (copies, casts, dropout, softmax, lookups). norm: layer
// norm and RMS norm, forward and backward. activation: GELU, SiLU and their gated forms.
// residual: adds of two streams (residual adds, bias-dropout-add, gradient sums at
// forks). rope: rotary position embeddings. optimizer: the optimizer step's passes over
// parameters, gradients and states (PyTorch's fused AdamW runs them as multi_tensor_apply
// launches of a few hundred blocks, well below the GPU's streaming rate). The families
// are those measurements separate (calibration/data: Vidur's per-op kernel times,
// PyTorch's ops timed one by one).
// Two families are attention kernels, not elementwise ones: kv_read and kv_read_fp8, an
// iteration's attention over a KV cache with decode queries in it (16-bit or 8-bit KV),
// whose reads of the cache stream at what decode kernels achieve by the bytes one launch
// reads (GpuSpec's kv_read_* figures), not at the HBM's sustained rate.
enum class KernelFamily : uint8_t { generic, norm, activation, residual, rope, optimizer, kv_read, kv_read_fp8 };
constexpr int kernel_family_count = 8;

inline const std::vector<KernelFamily>& fitted_kernel_families()
{
  static const std::vector<KernelFamily> all{KernelFamily::norm, KernelFamily::activation, KernelFamily::residual,
                                             KernelFamily::rope, KernelFamily::optimizer};
  return all;
}

inline const char* kernel_family_name(KernelFamily f)
{
  switch (f) {
    case KernelFamily::generic: return "generic";
    case KernelFamily::norm: return "norm";
    case KernelFamily::activation: return "activation";
    case KernelFamily::residual: return "residual";
    case KernelFamily::rope: return "rope";
    case KernelFamily::optimizer: return "optimizer";
    case KernelFamily::kv_read: return "kv_read";
    case KernelFamily::kv_read_fp8: return "kv_read_fp8";
  }
  return "?";
}

// The measurement benchmark of a family's kernels: "elementwise.norm", ...; plain
// "elementwise" for generic ones.
inline std::string elementwise_benchmark(KernelFamily f)
{
  return f == KernelFamily::generic ? std::string("elementwise") : std::string("elementwise.") + kernel_family_name(f);
}

} // namespace memwall

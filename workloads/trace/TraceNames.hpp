#pragma once
// What the names in a PyTorch profiler trace say: a kernel's class and format, an NCCL
// collective's kind and element size, an allocation's category from the CPU ops around
// it, and which CUDA stream is which of memwall's.
#include "workloads/dag/Op.hpp"
#include "workloads/trace/KinetoTrace.hpp"

#include <map>
#include <string>
#include <vector>

namespace memwall {

// What a kernel is, from its name alone (traces without record_shapes give no more):
// GEMMs and convolutions (cuBLAS, CUTLASS, cuDNN's implicit GEMMs) and attention are
// compute-bound at the format their name says; PyTorch's elementwise, reduction,
// normalisation, copy and layout kernels memory-bound; the rest `other`.
struct KernelKind {
  KernelClass kclass = KernelClass::other;
  Dtype dtype        = Dtype::fp32;
};
KernelKind kernel_kind(const std::string& name);
// An NCCL kernel (ncclKernel_*, ncclDevKernel_*): a collective, kept as a kernel only
// where NCCL runs as recorded.
bool is_nccl_kernel(const std::string& name);

// NCCL's "Collective name" as memwall's collective; false for what it does not model.
bool collective_kind(const std::string& name, CollectiveKind& kind);

// Bytes of one element of NCCL's "dtype" ("Float" 4, "Half" 2, "Long" 8, ...).
double element_bytes(const std::string& dtype);

// What an allocation holds, from the CPU ops it was made in (innermost last): the
// optimizer's step its states and temporaries, gradient accumulation and DDP's buckets
// gradients, any other op (forward or backward) activations, outside every op `other`.
MemCategory scope_category(const std::vector<const std::string*>& scope);

// The CUDA streams of one GPU of a trace as memwall's streams: the busiest non-NCCL
// stream is `compute`, NCCL's streams `comm` first, the others by first use; more than
// six is an InputError.
std::map<int64_t, StreamKind> map_streams(const KinetoTrace& t, int device);

} // namespace memwall

#include "workloads/trace/TraceNames.hpp"

#include "base/InputError.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace memwall {

namespace {

bool contains_any(const std::string& name, std::initializer_list<const char*> parts)
{
  for (const char* p : parts)
    if (name.find(p) != std::string::npos)
      return true;
  return false;
}

// The format a GEMM or attention kernel's name says. cuBLAS 12.8+'s Hopper kernels
// (nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTT) give it as one letter between
// underscores: h 16-bit (fp16 or bf16: the same tensor cores), s tf32 (a float GEMM on
// tensor cores), q / e4m3 / e5m2 fp8; cuDNN's fused attention says f16 or bf16.
Dtype kernel_dtype(const std::string& name)
{
  if (contains_any(name, {"e4m3", "e5m2", "fp8", "_q_"}))
    return Dtype::fp8;
  if (contains_any(name, {"tf32", "s1688", "s16816", "tensorop_s"}) ||
      (name.rfind("nvjet", 0) == 0 && contains_any(name, {"_s_"})))
    return Dtype::tf32;
  if (contains_any(name, {"bf16", "BFloat16"}))
    return Dtype::bf16;
  if (contains_any(name, {"h884", "h1688", "h16816", "hmma", "fp16", "f16f16", "_f16", "Half", "__half"}) ||
      (name.rfind("nvjet", 0) == 0 && contains_any(name, {"_h_"})))
    return Dtype::fp16;
  return Dtype::fp32;
}

} // namespace

bool is_nccl_kernel(const std::string& name) { return name.rfind("nccl", 0) == 0; }

// Kernels by the library that names them, checked in this order (the first match wins):
// 1. memory-bound helpers of fused attention and sorting (cuDNN's fusion:: pre- and
//    post-processing of flash attention, CUB's sorts and scans): elementwise, though
//    their names say fmha or attention;
// 2. attention: FlashAttention 2 and 3 (flash_fwd_*, flash::), cuDNN's SDPA
//    (cudnn_generated_fort_native_sdpa_*), xFormers / PyTorch mem-efficient (fmha_*);
// 3. GEMMs and convolutions: cuBLAS (nvjet_* from 12.8 on Hopper, *gemm*, xmma,
//    sm80_xmma), CUTLASS, cuDNN's implicit GEMMs (fprop, dgrad, wgrad, winograd) and
//    Triton's matmul templates (triton_tem_*, triton_mm);
// 4. memory-bound: PyTorch's elementwise, reduction, normalisation, copy, index and
//    layout kernels, fused optimizers (multi_tensor_apply), the loss (cunn_SoftMax*,
//    nll_loss), embedding backward, and Triton's generated pointwise and reduction
//    kernels (triton_poi_*, triton_red_*, triton_per_*);
// NCCL kernels become collectives; what matches none is `other` (timed as memory-bound,
// counted in unclassified_kernel_time_s).
KernelKind kernel_kind(const std::string& name)
{
  KernelKind k;
  if (is_nccl_kernel(name))
    return k;
  k.dtype = kernel_dtype(name);
  if (contains_any(name, {"cudnn::fusion::", "cub::", "DeviceRadixSort", "DeviceScan", "DeviceUniqueByKey"}))
    k.kclass = KernelClass::elementwise;
  else if (contains_any(name, {"flash", "fmha", "attention", "Attention", "sdpa"}))
    k.kclass = KernelClass::attention;
  else if (name.rfind("nvjet", 0) == 0 || name.rfind("triton_tem", 0) == 0 || name.rfind("triton_mm", 0) == 0 ||
           contains_any(name, {"gemm", "Gemm", "GEMM", "cutlass", "xmma", "scudnn", "dgrad", "wgrad", "fprop", "conv",
                               "Conv", "winograd", "h884", "s884", "1688", "16816", "hmma"}))
    k.kclass = KernelClass::gemm;
  else if (name.rfind("triton_", 0) == 0 ||
           contains_any(name, {"elementwise", "reduce",      "Reduce",       "bn_",
                               "batch_norm",  "norm",        "Norm",         "softmax",
                               "Softmax",     "SoftMax",     "nll_loss",     "nchwTo",
                               "nhwcTo",      "copy",        "Copy",         "fill",
                               "Fill",        "index",       "Index",        "cat_",
                               "Cat",         "scatter",     "gather",       "embedding",
                               "Embedding",   "grad_weight", "krn_partial",  "partial_segments",
                               "adam",        "Adam",        "multi_tensor", "pool",
                               "Pool",        "transpose",   "dropout",      "Dropout",
                               "relu",        "gelu",        "silu",         "arange",
                               "scan",        "Memcpy",      "Memset",       "unrolled",
                               "vectorized"}))
    k.kclass = KernelClass::elementwise;
  return k;
}

bool collective_kind(const std::string& name, CollectiveKind& kind)
{
  std::string n;
  for (char c : name)
    if (c != '_' && c != ' ')
      n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "allreduce")
    kind = CollectiveKind::all_reduce;
  else if (n == "allgather" || n == "allgatherbase" ||
           n == "broadcast") // a ring broadcast moves what an all-gather does
    kind = CollectiveKind::all_gather;
  else if (n == "reducescatter" || n == "reducescatterbase")
    kind = CollectiveKind::reduce_scatter;
  else if (n == "alltoall" || n == "alltoallv" || n == "alltoallbase")
    kind = CollectiveKind::all_to_all;
  else
    return false;
  return true;
}

double element_bytes(const std::string& dtype)
{
  std::string d;
  for (char c : dtype)
    d += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (d == "double" || d == "long" || d == "int64" || d == "float64")
    return 8;
  if (d == "half" || d == "bfloat16" || d == "float16" || d == "short" || d == "int16")
    return 2;
  if (d == "byte" || d == "char" || d == "bool" || d == "uint8" || d == "int8" || d.rfind("float8", 0) == 0)
    return 1;
  return 4; // Float, Int
}

MemCategory scope_category(const std::vector<const std::string*>& scope)
{
  for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
    const std::string& n = **it;
    if (n.find("Optimizer.step") != std::string::npos || n.find("optimizer") != std::string::npos ||
        n.find("Optimizer.zero_grad") != std::string::npos)
      return MemCategory::optimizer;
    if (n.find("AccumulateGrad") != std::string::npos || n.find("Reducer") != std::string::npos ||
        n.find("DistributedDataParallel") != std::string::npos || n.find("nccl:") != std::string::npos)
      return MemCategory::gradients;
  }
  return scope.empty() ? MemCategory::other : MemCategory::activations;
}

std::map<int64_t, StreamKind> map_streams(const KinetoTrace& t, int device)
{
  std::map<int64_t, size_t> count;
  std::map<int64_t, bool> nccl;
  std::vector<int64_t> order;
  for (const TraceGpuOp& g : t.gpu_ops) {
    if (g.device != device)
      continue;
    if (count[g.stream]++ == 0)
      order.push_back(g.stream);
    nccl[g.stream] = nccl[g.stream] || g.collective >= 0;
  }
  std::vector<StreamKind> free_kinds{StreamKind::compute, StreamKind::comm, StreamKind::h2d,
                                     StreamKind::d2h,     StreamKind::p2p,  StreamKind::gather};
  std::map<int64_t, StreamKind> out;
  auto take = [&](int64_t s, StreamKind preferred) {
    auto it = std::find(free_kinds.begin(), free_kinds.end(), preferred);
    if (it == free_kinds.end())
      it = free_kinds.begin();
    if (it == free_kinds.end())
      throw InputError(t.file + ": GPU " + std::to_string(device) + " uses " + std::to_string(count.size()) +
                       " CUDA streams; memwall replays at most 6 per GPU");
    out[s] = *it;
    free_kinds.erase(it);
  };
  int64_t busiest = -1;
  for (int64_t s : order)
    if (!nccl[s] && (busiest < 0 || count[s] > count[busiest]))
      busiest = s;
  if (busiest >= 0)
    take(busiest, StreamKind::compute);
  for (int64_t s : order)
    if (nccl[s])
      take(s, StreamKind::comm);
  for (int64_t s : order)
    if (!out.count(s))
      take(s, StreamKind::h2d);
  return out;
}

} // namespace memwall

#include "TraceNames.hpp"

#include "InputError.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace memwall {

KernelKind kernel_kind(const std::string& name)
{
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  auto any = [&](std::initializer_list<const char*> l) {
    for (const char* s : l)
      if (has(s))
        return true;
    return false;
  };
  KernelKind k;
  if (name.rfind("nccl", 0) == 0) // kept as a kernel only where NCCL runs as recorded
    return k;
  if (any({"tf32", "s1688", "s16816", "tensorop_s"}))
    k.dtype = Dtype::tf32;
  else if (any({"bf16", "BFloat16"}))
    k.dtype = Dtype::bf16;
  else if (any({"h884", "h1688", "h16816", "hmma", "fp16", "f16f16", "Half", "__half"}))
    k.dtype = Dtype::fp16;
  else if (any({"e4m3", "e5m2", "fp8"}))
    k.dtype = Dtype::fp8;
  if (any({"flash", "fmha", "attention", "Attention", "sdpa"}))
    k.kclass = KernelClass::attention;
  else if (any({"gemm", "Gemm", "GEMM", "cutlass", "xmma", "scudnn", "dgrad", "wgrad", "fprop", "conv", "Conv",
                "winograd", "h884", "s884", "1688", "16816", "hmma"}))
    k.kclass = KernelClass::gemm;
  else if (any({"elementwise", "reduce", "Reduce", "bn_", "batch_norm", "norm", "Norm", "softmax", "Softmax",
                "nchwTo", "nhwcTo", "copy", "Copy", "fill", "Fill", "index", "Index", "cat_", "Cat", "scatter",
                "gather", "embedding", "Embedding", "adam", "Adam", "multi_tensor", "pool", "Pool", "transpose",
                "dropout", "Dropout", "relu", "gelu", "silu", "Memcpy", "Memset", "unrolled", "vectorized"}))
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
  else if (n == "allgather" || n == "allgatherbase" || n == "broadcast") // a ring broadcast moves what an all-gather does
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

// memwall-gpubench: microbenchmarks of one GPU for memwall's calibration, written as the
// tidy measurement CSV (calibration/Measurement.hpp). Run by `memwall calibrate measure`.
//
//   gemm          cuBLAS GemmEx over a grid of (m, n, k) per dtype (fp32, tf32, fp16, bf16)
//   elementwise   a copy kernel from 1 KiB to 1 GiB (launch overhead, L2 and HBM bandwidth)
//   h2d/d2h       cudaMemcpyAsync pinned and pageable, both directions and both at once
//   peer          cudaMemcpyPeerAsync between every pair of GPUs that can reach each other
//   managed_fault first touch on the GPU of managed memory written by the host
//
// Every timed point: warm-up, an L2 flush (a write of twice the L2 size) before each
// run, the median of the runs. Exit 2 when there is no CUDA device.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CHECK(call)                                                                                     \
  do {                                                                                                  \
    cudaError_t e_ = (call);                                                                            \
    if (e_ != cudaSuccess) {                                                                            \
      std::fprintf(stderr, "memwall-gpubench: %s failed: %s\n", #call, cudaGetErrorString(e_));        \
      std::exit(3);                                                                                     \
    }                                                                                                   \
  } while (0)

struct Row {
  std::string benchmark, dtype;
  double m = 0, n = 0, k = 0, bytes = 0, flops = 0, time_s = 0;
  int samples = 0;
};

std::string gpu_id;
std::string source;
std::vector<Row> rows;
void* flush_buf    = nullptr;
size_t flush_bytes = 0;

void flush_l2() { CHECK(cudaMemsetAsync(flush_buf, 0, flush_bytes)); }

// Seconds one call of fn takes on the stream, timed with events.
template <typename Fn>
double event_time(Fn fn)
{
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  fn();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return ms * 1e-3;
}

double median(std::vector<double> t)
{
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Median time of `runs` calls of fn after a warm-up, each after an L2 flush.
template <typename Fn>
double median_time(Fn fn, int runs, bool flush = true)
{
  fn(); // warm-up
  CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    if (flush)
      flush_l2();
    t.push_back(event_time(fn));
  }
  return median(t);
}

std::string guess_gpu_id(const std::string& name)
{
  std::string n;
  for (char c : name)
    n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  struct Pattern {
    const char *a, *b, *id;
  };
  const Pattern table[] = {{"a100", "80gb", "a100-sxm4-80gb"}, {"a100", "40gb", "a100-sxm4-40gb"},
                           {"h100", "pcie", "h100-pcie-80gb"}, {"h100", "", "h100-sxm-80gb"},
                           {"h200", "", "h200-sxm-141gb"},    {"b200", "", "b200"},
                           {"a40", "", "a40"},                {"l40s", "", "l40s"},
                           {"4090", "", "rtx-4090"},          {"4070", "", "rtx-4070"},
                           {"t4", "", "t4"},                  {"v100", "", "v100-sxm2-32gb"}};
  for (const Pattern& p : table)
    if (n.find(p.a) != std::string::npos && n.find(p.b) != std::string::npos)
      return p.id;
  return "";
}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n)
{
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void touch_kernel(char* p, size_t n, size_t stride)
{
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * stride; i < n; i += size_t(gridDim.x) * blockDim.x * stride)
    p[i] += 1;
}

void bench_gemm(cublasHandle_t h, bool quick)
{
  struct Type {
    const char* name;
    cudaDataType_t data;
    cublasComputeType_t compute;
    size_t bytes;
  };
  const Type types[] = {{"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4},
                        {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
                        {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2},
                        {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2}};
  std::vector<int> ms = quick ? std::vector<int>{16, 128, 1024, 4096} : std::vector<int>{1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  std::vector<int> nk = quick ? std::vector<int>{1024, 4096, 8192} : std::vector<int>{512, 1024, 2048, 4096, 8192, 12288, 16384};
  size_t biggest = 0;
  for (int m : ms)
    for (int n : nk)
      for (int k : nk)
        biggest = std::max(biggest, size_t(m) * k + size_t(k) * n + size_t(m) * n);
  void* buf = nullptr;
  CHECK(cudaMalloc(&buf, biggest * 4));
  CHECK(cudaMemset(buf, 0, biggest * 4));
  for (const Type& t : types)
    for (int m : ms)
      for (int n : nk)
        for (int k : nk) {
          char* A = static_cast<char*>(buf);
          char* B = A + size_t(m) * k * t.bytes;
          char* C = B + size_t(k) * n * t.bytes;
          float alpha = 1, beta = 0;
          // Row-major C[m x n] = A[m x k] B[k x n] is column-major C^T = B^T A^T.
          auto run = [&] {
            cublasStatus_t s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, t.data, n, A, t.data, k,
                                            &beta, C, t.data, n, t.compute, CUBLAS_GEMM_DEFAULT);
            if (s != CUBLAS_STATUS_SUCCESS) {
              std::fprintf(stderr, "memwall-gpubench: cublasGemmEx failed (%d)\n", int(s));
              std::exit(3);
            }
          };
          int runs = 15;
          Row r;
          r.benchmark = "gemm";
          r.dtype     = t.name;
          r.m = m, r.n = n, r.k = k;
          r.flops   = 2.0 * m * n * k;
          r.bytes   = double(t.bytes) * (double(m) * k + double(k) * n + double(m) * n);
          r.time_s  = median_time(run, runs);
          r.samples = runs;
          rows.push_back(r);
        }
  CHECK(cudaFree(buf));
}

std::vector<size_t> sizes(size_t from, size_t to)
{
  std::vector<size_t> s;
  for (size_t b = from; b <= to; b *= 4)
    s.push_back(b);
  return s;
}

void bench_elementwise(bool quick)
{
  size_t top = quick ? (size_t(1) << 28) : (size_t(1) << 30);
  void *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, top));
  CHECK(cudaMalloc(&out, top));
  for (size_t b : sizes(1024, top)) {
    size_t n = b / sizeof(float4);
    int blocks = int(std::min<size_t>((n + 255) / 256, 65535));
    auto run = [&] { copy_kernel<<<blocks, 256>>>(static_cast<float4*>(in), static_cast<float4*>(out), n); };
    Row r;
    r.benchmark = "elementwise";
    r.bytes     = 2.0 * b; // read and written
    r.samples   = 25;
    r.time_s    = median_time(run, r.samples);
    rows.push_back(r);
  }
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
}

void bench_host_copies(bool quick)
{
  size_t top = quick ? (size_t(1) << 28) : (size_t(1) << 30);
  void *dev = nullptr, *dev2 = nullptr, *pinned = nullptr, *pinned2 = nullptr;
  CHECK(cudaMalloc(&dev, top));
  CHECK(cudaMalloc(&dev2, top));
  CHECK(cudaMallocHost(&pinned, top));
  CHECK(cudaMallocHost(&pinned2, top));
  std::vector<char> pageable(top, 1);
  cudaStream_t s2;
  CHECK(cudaStreamCreate(&s2));
  for (size_t b : sizes(1024, top)) {
    auto add = [&](const char* name, double bytes, auto fn) {
      Row r;
      r.benchmark = name;
      r.bytes     = bytes;
      r.samples   = 9;
      r.time_s    = median_time(fn, r.samples, false);
      rows.push_back(r);
    };
    add("h2d_pinned", b, [&] { CHECK(cudaMemcpyAsync(dev, pinned, b, cudaMemcpyHostToDevice)); });
    add("d2h_pinned", b, [&] { CHECK(cudaMemcpyAsync(pinned, dev, b, cudaMemcpyDeviceToHost)); });
    add("h2d_pageable", b, [&] { CHECK(cudaMemcpy(dev, pageable.data(), b, cudaMemcpyHostToDevice)); });
    add("d2h_pageable", b, [&] { CHECK(cudaMemcpy(pageable.data(), dev, b, cudaMemcpyDeviceToHost)); });
    add("bidir_pinned", 2.0 * b, [&] {
      CHECK(cudaMemcpyAsync(dev, pinned, b, cudaMemcpyHostToDevice, 0));
      CHECK(cudaMemcpyAsync(pinned2, dev2, b, cudaMemcpyDeviceToHost, s2));
      CHECK(cudaStreamSynchronize(s2));
    });
  }
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFreeHost(pinned2));
  CHECK(cudaFree(dev));
  CHECK(cudaFree(dev2));
}

void bench_peer(int devices, bool quick)
{
  size_t top = quick ? (size_t(1) << 28) : (size_t(1) << 30);
  for (int a = 0; a < devices; ++a)
    for (int b = 0; b < devices; ++b) {
      int ok = 0;
      if (a == b || cudaDeviceCanAccessPeer(&ok, a, b) != cudaSuccess || !ok)
        continue;
      CHECK(cudaSetDevice(a));
      cudaDeviceEnablePeerAccess(b, 0);
      cudaGetLastError(); // already enabled is fine
      void *src = nullptr, *dst = nullptr;
      CHECK(cudaMalloc(&src, top));
      CHECK(cudaSetDevice(b));
      CHECK(cudaMalloc(&dst, top));
      CHECK(cudaSetDevice(a));
      for (size_t s : sizes(1024, top)) {
        Row r;
        r.benchmark = "peer";
        r.bytes     = s;
        r.samples   = 9;
        r.time_s    = median_time([&] { CHECK(cudaMemcpyPeerAsync(dst, b, src, a, s)); }, r.samples, false);
        rows.push_back(r);
      }
      CHECK(cudaFree(src));
      CHECK(cudaSetDevice(b));
      CHECK(cudaFree(dst));
    }
  CHECK(cudaSetDevice(0));
}

void bench_managed(bool quick)
{
  size_t free_b = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_b, &total));
  size_t top = std::min(quick ? (size_t(1) << 28) : (size_t(1) << 30), free_b / 4); // never oversubscribe here
  for (size_t b : sizes(size_t(1) << 20, top)) {
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      char* p = nullptr;
      CHECK(cudaMallocManaged(&p, b));
      std::memset(p, 1, b); // resident on the host
      t.push_back(event_time([&] { touch_kernel<<<1024, 256>>>(p, b, 4096); }));
      CHECK(cudaFree(p));
    }
    Row r;
    r.benchmark = "managed_fault";
    r.bytes     = b;
    r.samples   = static_cast<int>(t.size());
    r.time_s    = median(t);
    rows.push_back(r);
  }
}

std::string num(double v)
{
  if (v == 0)
    return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

} // namespace

int main(int argc, char** argv)
{
  std::string out;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--gpu" && i + 1 < argc)
      gpu_id = argv[++i];
    else if (a == "--quick")
      quick = true;
    else {
      std::fprintf(stderr, "usage: memwall-gpubench -o MEAS.csv [--gpu ID] [--quick]\n");
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "usage: memwall-gpubench -o MEAS.csv [--gpu ID] [--quick]\n");
    return 2;
  }
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "memwall-gpubench: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 2;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (gpu_id.empty())
    gpu_id = guess_gpu_id(prop.name);
  if (gpu_id.empty()) {
    std::fprintf(stderr, "memwall-gpubench: '%s' is not a catalog GPU; name one with --gpu\n", prop.name);
    return 2;
  }
  source = std::string("memwall-gpubench on ") + prop.name + " (" + std::to_string(prop.multiProcessorCount) +
           " SMs, " + std::to_string(prop.totalGlobalMem) + " bytes)";
  flush_bytes = std::max<size_t>(size_t(prop.l2CacheSize) * 2, 64 << 20);
  CHECK(cudaMalloc(&flush_buf, flush_bytes));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "memwall-gpubench: cublasCreate failed\n");
    return 3;
  }
  std::fprintf(stderr, "memwall-gpubench: %s, %d device(s); NCCL collectives: not built (use nccl-tests and "
                       "memwall calibrate import nccl-tests)\n", prop.name, devices);
  bench_gemm(h, quick);
  bench_elementwise(quick);
  bench_host_copies(quick);
  bench_peer(devices, quick);
  bench_managed(quick);
  cublasDestroy(h);
  FILE* f = std::fopen(out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "memwall-gpubench: cannot write %s\n", out.c_str());
    return 3;
  }
  std::fprintf(f, "gpu,benchmark,dtype,m,n,k,ranks,ranks_per_node,bytes,flops,time_s,samples,source\n");
  for (const Row& r : rows)
    std::fprintf(f, "%s,%s,%s,%s,%s,%s,,,%s,%s,%s,%d,\"%s\"\n", gpu_id.c_str(), r.benchmark.c_str(), r.dtype.c_str(),
                 num(r.m).c_str(), num(r.n).c_str(), num(r.k).c_str(), num(r.bytes).c_str(), num(r.flops).c_str(),
                 num(r.time_s).c_str(), r.samples, source.c_str());
  return std::fclose(f) == 0 ? 0 : 3;
}

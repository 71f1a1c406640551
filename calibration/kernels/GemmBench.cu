// GEMM microbenchmarks of memwall-gpubench: cuBLAS GemmEx per dtype over a grid of
// shapes, and FP8 through cuBLASLt. Operands hold random values (OperandFill.hpp), never
// zeros: on Hopper zeros run ~11 % faster than real data.
#include "calibration/kernels/GpuBench.hpp"
#include "calibration/kernels/OperandFill.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <chrono>
#include <thread>

namespace gpubench {
namespace {

template <typename T>
__device__ T from_float(float v)
{
  return T(v);
}

// `n` elements of T at p, each operand_value(seed, i).
template <typename T>
__global__ void fill_kernel(T* p, size_t n, uint64_t seed)
{
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(operand_value(seed, i));
}

template <typename T>
void fill_random(void* p, size_t bytes, uint64_t seed)
{
  size_t n = bytes / sizeof(T);
  fill_kernel<T><<<1024, 256>>>(static_cast<T*>(p), n, seed);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
}

} // namespace

void bench_gemm(bool quick)
{
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "memwall-gpubench: cublasCreate failed\n");
    std::exit(3);
  }
  struct Type {
    const char* name;
    cudaDataType_t data;
    cublasComputeType_t compute;
    size_t bytes;
  };
  const Type types[]  = {{"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4},
                         {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
                         {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2},
                         {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2}};
  std::vector<int> ms = quick ? std::vector<int>{16, 128, 1024, 4096}
                              : std::vector<int>{1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  std::vector<int> nk =
      quick ? std::vector<int>{1024, 4096, 8192} : std::vector<int>{512, 1024, 2048, 4096, 8192, 12288, 16384};
  // Operands and results apart: a result never becomes the next GEMM's operand (random
  // data multiplied again and again grows past fp16's range).
  size_t biggest = 0, biggest_out = 0;
  for (int m : ms)
    for (int n : nk)
      for (int k : nk) {
        biggest     = std::max(biggest, size_t(m) * k + size_t(k) * n);
        biggest_out = std::max(biggest_out, size_t(m) * n);
      }
  void *buf = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&buf, biggest * 4));
  CHECK(cudaMalloc(&out, biggest_out * 4));
  for (const Type& t : types) {
    // Random operands in this dtype's format.
    if (t.data == CUDA_R_32F)
      fill_random<float>(buf, biggest * 4, 1);
    else if (t.data == CUDA_R_16F)
      fill_random<__half>(buf, biggest * 4, 1);
    else
      fill_random<__nv_bfloat16>(buf, biggest * 4, 1);
    for (int m : ms)
      for (int n : nk)
        for (int k : nk) {
          char* A     = static_cast<char*>(buf);
          char* B     = A + size_t(m) * k * t.bytes;
          char* C     = static_cast<char*>(out);
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
          r.pass      = "dgrad"; // row-major NN: dX = dY W, the input gradient's layout
          r.m = m, r.n = n, r.k = k;
          r.flops   = 2.0 * m * n * k;
          r.bytes   = double(t.bytes) * (double(m) * k + double(k) * n + double(m) * n);
          r.time_s  = median_time(run, runs);
          r.samples = runs;
          rows.push_back(r);
        }
  }
  CHECK(cudaFree(out));
  CHECK(cudaFree(buf));
  cublasDestroy(h);
}

// FP8 (e4m3) GEMMs through cuBLASLt, bf16 output, fp32 accumulation: what FP8 training
// (Transformer Engine) and FP8 serving run. cuBLASLt's FP8 kernels want the "TN" layout
// (A transposed) and dimensions that are multiples of 16, so m < 16 is left out. A shape
// without a kernel, or a GPU without FP8 tensor cores (before sm_89), is skipped with a line.
void bench_gemm_fp8(const cudaDeviceProp& prop, bool quick)
{
  if (prop.major * 10 + prop.minor < 89) {
    std::fprintf(stderr, "memwall-gpubench: no FP8 tensor cores on sm_%d%d; fp8 GEMMs skipped\n", prop.major,
                 prop.minor);
    return;
  }
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "memwall-gpubench: cublasLtCreate failed; fp8 GEMMs skipped\n");
    return;
  }
  std::vector<int> ms = quick ? std::vector<int>{16, 128, 1024, 4096}
                              : std::vector<int>{16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  std::vector<int> nk =
      quick ? std::vector<int>{1024, 4096, 8192} : std::vector<int>{512, 1024, 2048, 4096, 8192, 12288, 16384};
  size_t biggest = 0, biggest_out = 0;
  for (int m : ms)
    for (int n : nk)
      for (int k : nk) {
        biggest     = std::max(biggest, size_t(m) * k + size_t(k) * n);
        biggest_out = std::max(biggest_out, 2 * size_t(m) * n);
      }
  // Random e4m3 operands; the bf16 results apart (bf16 bits read as e4m3 hold NaNs).
  const size_t workspace_bytes = size_t(32) << 20;
  void *buf = nullptr, *out = nullptr, *workspace = nullptr;
  CHECK(cudaMalloc(&buf, biggest));
  CHECK(cudaMalloc(&out, biggest_out));
  fill_random<__nv_fp8_e4m3>(buf, biggest, 1);
  CHECK(cudaMalloc(&workspace, workspace_bytes));
  size_t skipped = 0;
  for (int m : ms)
    for (int n : nk)
      for (int k : nk) {
        char* A                  = static_cast<char*>(buf);
        char* B                  = A + size_t(m) * k;
        char* C                  = static_cast<char*>(out);
        cublasLtMatmulDesc_t op  = nullptr;
        cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
        cublasLtMatmulPreference_t pref = nullptr;
        cublasOperation_t trans = CUBLAS_OP_T, plain = CUBLAS_OP_N;
        cublasLtMatmulHeuristicResult_t heuristic{};
        int found = 0;
        bool ok =
            cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans) ==
                CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain) ==
                CUBLAS_STATUS_SUCCESS &&
            cublasLtMatrixLayoutCreate(&a, CUDA_R_8F_E4M3, k, m, k) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatrixLayoutCreate(&b, CUDA_R_8F_E4M3, k, n, k) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, m, n, m) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                 sizeof workspace_bytes) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 1, &heuristic, &found) == CUBLAS_STATUS_SUCCESS &&
            found > 0;
        float alpha = 1, beta = 0;
        auto run = [&] {
          cublasStatus_t st = cublasLtMatmul(lt, op, &alpha, A, a, B, b, &beta, C, c, C, c, &heuristic.algo, workspace,
                                             workspace_bytes, 0);
          if (st != CUBLAS_STATUS_SUCCESS) {
            std::fprintf(stderr, "memwall-gpubench: cublasLtMatmul (fp8) failed (%d)\n", int(st));
            std::exit(3);
          }
        };
        if (ok) {
          Row r;
          r.benchmark = "gemm";
          r.dtype     = "fp8";
          r.pass      = "fwd"; // both operands K-major: Y = X W^T, the forward's layout
          r.m = m, r.n = n, r.k = k;
          r.flops   = 2.0 * m * n * k;
          r.bytes   = double(m) * k + double(k) * n + 2.0 * m * n;
          r.samples = 15;
          r.time_s  = median_time(run, r.samples);
          rows.push_back(r);
        } else {
          ++skipped;
        }
        if (pref)
          cublasLtMatmulPreferenceDestroy(pref);
        if (c)
          cublasLtMatrixLayoutDestroy(c);
        if (b)
          cublasLtMatrixLayoutDestroy(b);
        if (a)
          cublasLtMatrixLayoutDestroy(a);
        if (op)
          cublasLtMatmulDescDestroy(op);
      }
  if (skipped)
    std::fprintf(stderr, "memwall-gpubench: %zu fp8 GEMM shapes have no cuBLASLt kernel; skipped\n", skipped);
  CHECK(cudaFree(workspace));
  CHECK(cudaFree(out));
  CHECK(cudaFree(buf));
  cublasLtDestroy(lt);
}

} // namespace gpubench

namespace gpubench {

// The same bf16 GEMM timed cold and under sustained load: what a training step's
// back-to-back GEMMs run at once the GPU has held its power limit for a while, against
// the short runs the grid above (and every published GEMM table) measures. Hopper and
// Blackwell lower their SM clocks within milliseconds of full load (DeepGEMM issue #120:
// 1,980 -> 1,575 MHz; flashinfer PR #2899: B200 -15 % TFLOP/s after ~5 ms). Two rows:
// gemm_burst, 5 GEMMs after 2 s idle; gemm_sustained, the GEMMs of the second half of a
// `seconds`-long run with no gaps (batches of events, no L2 flush).
void bench_gemm_sustained(bool quick)
{
  const int n           = quick ? 4096 : 8192;
  const double seconds  = quick ? 5.0 : 60.0;
  const size_t elements = size_t(n) * n;
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "memwall-gpubench: cublasCreate failed; sustained GEMMs skipped\n");
    return;
  }
  void *ab = nullptr, *c = nullptr;
  CHECK(cudaMalloc(&ab, 2 * elements * sizeof(__nv_bfloat16)));
  CHECK(cudaMalloc(&c, elements * sizeof(__nv_bfloat16)));
  fill_random<__nv_bfloat16>(ab, 2 * elements * sizeof(__nv_bfloat16), 7);
  const char* A = static_cast<char*>(ab);
  const char* B = A + elements * sizeof(__nv_bfloat16);
  float alpha = 1, beta = 0;
  auto gemms = [&](int count) {
    for (int i = 0; i < count; ++i)
      if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, B, CUDA_R_16BF, n, A, CUDA_R_16BF, n, &beta, c,
                       CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "memwall-gpubench: cublasGemmEx failed (sustained)\n");
        std::exit(3);
      }
  };
  gemms(3); // cuBLAS's heuristics and the kernel's first load
  CHECK(cudaDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double flops = 2.0 * n * n * double(n);
  Row burst;
  burst.benchmark = "gemm_burst";
  burst.dtype     = "bf16";
  burst.m = burst.n = burst.k = n;
  burst.samples               = 5;
  burst.flops                 = flops * burst.samples;
  burst.time_s                = event_time([&] { gemms(burst.samples); });
  // Batches of about 50 ms, back to back, until `seconds` have passed.
  const int batch = std::max(1, int(0.05 / (burst.time_s / burst.samples)));
  // A line every 5 s of load: how soon and how far the rate falls (the clocks' path).
  std::vector<double> times;
  double window_s  = 0;
  int window_gemms = 0;
  for (double elapsed = 0; elapsed < seconds;) {
    times.push_back(event_time([&] { gemms(batch); }));
    elapsed += times.back();
    window_s += times.back();
    window_gemms += batch;
    if (window_s >= 5.0 || elapsed >= seconds) {
      std::fprintf(stderr, "memwall-gpubench: sustained bf16 %d^3: %.1f s, %.0f TFLOP/s over the last %.1f s\n", n,
                   elapsed, flops * window_gemms / window_s / 1e12, window_s);
      window_s     = 0;
      window_gemms = 0;
    }
  }
  Row sustained       = burst;
  sustained.benchmark = "gemm_sustained";
  sustained.samples   = 0;
  sustained.time_s    = 0;
  for (size_t i = times.size() / 2; i < times.size(); ++i) {
    sustained.samples += batch;
    sustained.time_s += times[i];
  }
  sustained.flops = flops * sustained.samples;
  rows.push_back(burst);
  rows.push_back(sustained);
  std::fprintf(stderr, "memwall-gpubench: bf16 %d^3 GEMMs: %.0f TFLOP/s cold, %.0f TFLOP/s after %.0f s of load\n", n,
               burst.flops / burst.time_s / 1e12, sustained.flops / sustained.time_s / 1e12, seconds / 2);
  CHECK(cudaFree(c));
  CHECK(cudaFree(ab));
  cublasDestroy(h);
}

} // namespace gpubench

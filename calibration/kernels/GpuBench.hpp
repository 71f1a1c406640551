#pragma once
// What the microbenchmarks of memwall-gpubench share (gpubench.cu has the overview): the
// measurement rows they append to, the L2 flush, and event timing with the median of runs.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    cudaError_t e_ = (call);                                                                                           \
    if (e_ != cudaSuccess) {                                                                                           \
      std::fprintf(stderr, "memwall-gpubench: %s failed: %s\n", #call, cudaGetErrorString(e_));                        \
      std::exit(3);                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace gpubench {

struct Row {
  std::string benchmark, dtype;
  std::string pass; // gemm: the layer GEMM its layout is (GemmPass.hpp): fwd, dgrad or wgrad
  double m = 0, n = 0, k = 0, bytes = 0, flops = 0, time_s = 0;
  int samples = 0;
  int ranks = 0, ranks_per_node = 0; // collectives
};

extern std::vector<Row> rows; // every measurement, in the order taken
extern void* flush_buf;       // twice the L2, written before each timed run
extern size_t flush_bytes;

inline void flush_l2() { CHECK(cudaMemsetAsync(flush_buf, 0, flush_bytes)); }

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

inline double median(std::vector<double> t)
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

// Sizes from `from` to `to` bytes, by factors of 4.
std::vector<size_t> sizes(size_t from, size_t to);

// Each appends its rows; `quick` is a small grid (a smoke run).
void bench_gemm(bool quick);
void bench_gemm_fp8(const cudaDeviceProp& prop, bool quick);
void bench_gemm_sustained(bool quick); // a bf16 GEMM cold and after a run of back-to-back load
void bench_elementwise(bool quick);
void bench_host_copies(bool quick);
void bench_peer(int devices, bool quick);
void bench_managed(bool quick);
#ifdef MEMWALL_HAVE_NCCL
void bench_nccl(int devices, bool quick);
#endif

} // namespace gpubench

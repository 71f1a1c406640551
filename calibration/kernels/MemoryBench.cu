// Memory microbenchmarks of memwall-gpubench: a copy kernel over sizes (launch overhead,
// L2- and HBM-resident bandwidth), host copies pinned and pageable, peer copies, and
// managed memory's first-touch faults and prefetches.
//
// bidir_pinned runs its two copies on two streams created non-blocking, each timed from
// one start event to the later of the two ends. (It first used the legacy default stream
// beside a blocking stream: the legacy stream synchronises with blocking streams, so the
// two copies ran one after the other and the rows measured one direction's rate.)
#include "calibration/kernels/GpuBench.hpp"

#include <cstring>

namespace gpubench {
namespace {

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n)
{
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void touch_kernel(char* p, size_t n, size_t stride)
{
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * stride; i < n;
       i += size_t(gridDim.x) * blockDim.x * stride)
    p[i] += 1;
}

} // namespace

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
    size_t n   = b / sizeof(float4);
    int blocks = int(std::min<size_t>((n + 255) / 256, 65535));
    auto run   = [&] { copy_kernel<<<blocks, 256>>>(static_cast<float4*>(in), static_cast<float4*>(out), n); };
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
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
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
    // Both directions at once: two non-blocking streams, timed from a start event on the
    // first to the end of the second, which the first waits for.
    {
      Row r;
      r.benchmark = "bidir_pinned";
      r.bytes     = 2.0 * b;
      r.samples   = 9;
      std::vector<double> t;
      for (int i = 0; i <= r.samples; ++i) {
        cudaEvent_t start, end, other;
        CHECK(cudaEventCreate(&start));
        CHECK(cudaEventCreate(&end));
        CHECK(cudaEventCreate(&other));
        CHECK(cudaEventRecord(start, s1));
        CHECK(cudaStreamWaitEvent(s2, start, 0));
        CHECK(cudaMemcpyAsync(dev, pinned, b, cudaMemcpyHostToDevice, s1));
        CHECK(cudaMemcpyAsync(pinned2, dev2, b, cudaMemcpyDeviceToHost, s2));
        CHECK(cudaEventRecord(other, s2));
        CHECK(cudaStreamWaitEvent(s1, other, 0));
        CHECK(cudaEventRecord(end, s1));
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        if (i > 0) // the first is a warm-up
          t.push_back(ms * 1e-3);
        CHECK(cudaEventDestroy(start));
        CHECK(cudaEventDestroy(end));
        CHECK(cudaEventDestroy(other));
      }
      r.time_s = median(t);
      rows.push_back(r);
    }
  }
  CHECK(cudaStreamDestroy(s1));
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
  // Never oversubscribe here: at most a quarter of what the card has free.
  size_t top = std::min(quick ? (size_t(1) << 28) : (size_t(1) << 30), free_b / 4);
  int device = 0;
  CHECK(cudaGetDevice(&device));
  for (size_t b : sizes(size_t(1) << 20, top)) {
    std::vector<double> faulted, prefetched;
    for (int i = 0; i < 5; ++i) {
      char* p = nullptr;
      CHECK(cudaMallocManaged(&p, b));
      std::memset(p, 1, b); // resident on the host
      faulted.push_back(event_time([&] { touch_kernel<<<1024, 256>>>(p, b, 4096); }));
      std::memset(p, 2, b); // back on the host
#if CUDART_VERSION >= 13000
      cudaMemLocation to{};
      to.type = cudaMemLocationTypeDevice;
      to.id   = device;
      prefetched.push_back(event_time([&] { CHECK(cudaMemPrefetchAsync(p, b, to, 0, 0)); }));
#else
      prefetched.push_back(event_time([&] { CHECK(cudaMemPrefetchAsync(p, b, device, 0)); }));
#endif
      CHECK(cudaFree(p));
    }
    for (const char* name : {"managed_fault", "managed_prefetch"}) {
      Row r;
      r.benchmark = name;
      r.bytes     = b;
      r.samples   = 5;
      r.time_s    = median(std::string(name) == "managed_fault" ? faulted : prefetched);
      rows.push_back(r);
    }
  }
}

} // namespace gpubench

// memwall-gpubench: microbenchmarks of one GPU for memwall's calibration, written as the
// tidy measurement CSV (calibration/Measurement.hpp). Run by `memwall calibrate measure`.
//
//   gemm          cuBLAS GemmEx over a grid of (m, n, k) per dtype (fp32, tf32, fp16, bf16);
//                 fp8 (e4m3 in, bf16 out) through cuBLASLt on GPUs that have it (sm_89+)
//   gemm_burst, gemm_sustained
//                 one bf16 GEMM cold and after a minute of back-to-back load (the clocks
//                 the power limit holds)
//   elementwise   a copy kernel from 1 KiB to 1 GiB (launch overhead, L2 and HBM bandwidth)
//   h2d/d2h       cudaMemcpyAsync pinned and pageable, both directions and both at once
//   peer          cudaMemcpyPeerAsync between every pair of GPUs that can reach each other
//   managed_fault first touch on the GPU of managed memory written by the host
//   all_reduce, all_gather, reduce_scatter, send_recv
//                 NCCL over 2, 4, 8 ... GPUs of this machine, 8 B to 1 GiB (when built with
//                 NCCL: MEMWALL_HAVE_NCCL; else import nccl-tests output)
//
// Every timed kernel: warm-up, an L2 flush (a write of twice the L2 size) before each
// run, the median of the runs; collectives: the median of timed batches. The pieces are
// GemmBench.cu, MemoryBench.cu and NcclBench.cu. `--only gemm_fp8,gemm_sustained` runs the
// groups named (BenchGroups.hpp). Exit 2 when there is no CUDA device or the arguments are wrong.
#include "calibration/kernels/BenchGroups.hpp"
#include "calibration/kernels/GpuBench.hpp"
#include "hwmodels/GpuNames.hpp"

#ifdef MEMWALL_HAVE_NCCL
#include <nccl.h>
#endif

#include <cctype>

namespace gpubench {

std::vector<Row> rows;
void* flush_buf    = nullptr;
size_t flush_bytes = 0;

} // namespace gpubench

namespace {

using namespace gpubench;

std::string gpu_id;
std::string source;

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
  std::set<std::string> only(bench_groups().begin(), bench_groups().end());
  const char* usage = "usage: memwall-gpubench -o MEAS.csv [--gpu ID] [--quick] [--only GROUP,...]\n";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--gpu" && i + 1 < argc)
      gpu_id = argv[++i];
    else if (a == "--quick")
      quick = true;
    else if (a == "--only" && i + 1 < argc) {
      std::string error;
      auto groups = parse_bench_groups(argv[++i], error);
      if (!groups) {
        std::fprintf(stderr, "memwall-gpubench: --only: %s (groups: %s)\n", error.c_str(),
                     bench_groups_joined().c_str());
        return 2;
      }
#ifndef MEMWALL_HAVE_NCCL
      if (groups->count("nccl")) {
        std::fprintf(stderr, "memwall-gpubench: --only nccl: built without NCCL (measure collectives with nccl-tests "
                             "and memwall calibrate import nccl-tests)\n");
        return 2;
      }
#endif
      only = *groups;
    } else {
      std::fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  int devices   = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "memwall-gpubench: no CUDA device (%s)\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 2;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (gpu_id.empty())
    gpu_id = memwall::gpu_id_from_device_name(prop.name, double(prop.totalGlobalMem));
  if (gpu_id.empty()) {
    std::fprintf(stderr, "memwall-gpubench: '%s' is not a catalog GPU; name one with --gpu\n", prop.name);
    return 2;
  }
  source = std::string("memwall-gpubench on ") + prop.name + " (" + std::to_string(prop.multiProcessorCount) +
           " SMs, " + std::to_string(prop.totalGlobalMem) + " bytes)";
  flush_bytes = std::max<size_t>(size_t(prop.l2CacheSize) * 2, 64 << 20);
  CHECK(cudaMalloc(&flush_buf, flush_bytes));
#ifdef MEMWALL_HAVE_NCCL
  std::fprintf(stderr, "memwall-gpubench: %s, %d device(s); NCCL %d\n", prop.name, devices, NCCL_VERSION_CODE);
#else
  std::fprintf(stderr,
               "memwall-gpubench: %s, %d device(s); NCCL collectives: not built (use nccl-tests and "
               "memwall calibrate import nccl-tests)\n",
               prop.name, devices);
#endif
  auto wanted = [&](const char* group) { return only.count(group) > 0; };
  if (wanted("gemm"))
    bench_gemm(quick);
  if (wanted("gemm_fp8"))
    bench_gemm_fp8(prop, quick);
  if (wanted("gemm_sustained"))
    bench_gemm_sustained(quick);
  if (wanted("elementwise"))
    bench_elementwise(quick);
  if (wanted("host_copies"))
    bench_host_copies(quick);
  if (wanted("peer"))
    bench_peer(devices, quick);
  if (wanted("managed"))
    bench_managed(quick);
#ifdef MEMWALL_HAVE_NCCL
  if (wanted("nccl"))
    bench_nccl(devices, quick);
#endif
  if (rows.empty()) { // e.g. --only peer on a machine of one GPU
    std::fprintf(stderr, "memwall-gpubench: the groups asked for measured nothing on this machine; nothing written\n");
    return 2;
  }
  FILE* f = std::fopen(out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "memwall-gpubench: cannot write %s\n", out.c_str());
    return 3;
  }
  std::fprintf(f, "gpu,benchmark,dtype,m,n,k,ranks,ranks_per_node,bytes,flops,time_s,samples,source,layer,pass\n");
  for (const Row& r : rows)
    std::fprintf(f, "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,\"%s\",,%s\n", gpu_id.c_str(), r.benchmark.c_str(),
                 r.dtype.c_str(), num(r.m).c_str(), num(r.n).c_str(), num(r.k).c_str(), num(r.ranks).c_str(),
                 num(r.ranks_per_node).c_str(), num(r.bytes).c_str(), num(r.flops).c_str(), num(r.time_s).c_str(),
                 r.samples, source.c_str(), r.pass.c_str());
  return std::fclose(f) == 0 ? 0 : 3;
}

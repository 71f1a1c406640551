// NCCL microbenchmarks of memwall-gpubench (built with MEMWALL_HAVE_NCCL only).
#include "calibration/kernels/GpuBench.hpp"

#include <nccl.h>

#include <chrono>

namespace gpubench {

#define NCCL_CHECK(call)                                                                                               \
  do {                                                                                                                 \
    ncclResult_t r_ = (call);                                                                                          \
    if (r_ != ncclSuccess) {                                                                                           \
      std::fprintf(stderr, "memwall-gpubench: %s failed: %s\n", #call, ncclGetErrorString(r_));                        \
      std::exit(3);                                                                                                    \
    }                                                                                                                  \
  } while (0)

// NCCL collectives over the first g GPUs of this machine (g = 2, 4, 8 ...), one process
// driving every GPU (ncclCommInitAll, calls grouped), as nccl-tests -g does. `bytes` is
// the buffer each rank contributes (all-reduce, reduce-scatter input) or receives
// (all-gather output), nccl-tests' "size"; send_recv runs between GPUs 0 and 1. The time
// of one call is a timed batch of back-to-back calls over the batch, the median of 5.
void bench_nccl(int devices, bool quick)
{
  if (devices < 2)
    return;
  size_t top = quick ? (size_t(1) << 28) : (size_t(1) << 30);
  std::vector<int> group_sizes;
  for (int g = 2; g <= devices; g *= 2)
    group_sizes.push_back(g);
  for (int g : group_sizes) {
    std::vector<int> ids(g);
    for (int i = 0; i < g; ++i)
      ids[i] = i;
    std::vector<ncclComm_t> comms(g);
    NCCL_CHECK(ncclCommInitAll(comms.data(), g, ids.data()));
    std::vector<cudaStream_t> streams(g);
    std::vector<void*> send(g), recv(g);
    for (int i = 0; i < g; ++i) {
      CHECK(cudaSetDevice(i));
      CHECK(cudaStreamCreate(&streams[i]));
      CHECK(cudaMalloc(&send[i], top));
      CHECK(cudaMalloc(&recv[i], top));
      CHECK(cudaMemset(send[i], 0, top));
    }
    auto sync_all = [&] {
      for (int i = 0; i < g; ++i) {
        CHECK(cudaSetDevice(i));
        CHECK(cudaStreamSynchronize(streams[i]));
      }
    };
    const char* kinds[] = {"all_reduce", "all_gather", "reduce_scatter", "send_recv"};
    for (const char* kind : kinds) {
      std::string k = kind;
      if (k == "send_recv" && g != 2)
        continue; // a pair is a pair; measured once, on the 2-GPU communicator
      for (size_t b = 8; b <= top; b *= 4) {
        size_t elems = b / 4; // fp32 elements per rank's buffer
        if (k == "all_gather" || k == "reduce_scatter")
          elems /= g; // each rank's share; b stays the whole buffer
        if (elems == 0)
          continue;
        auto call = [&] {
          NCCL_CHECK(ncclGroupStart());
          for (int i = 0; i < g; ++i) {
            if (k == "all_reduce")
              NCCL_CHECK(ncclAllReduce(send[i], recv[i], elems, ncclFloat, ncclSum, comms[i], streams[i]));
            else if (k == "all_gather")
              NCCL_CHECK(ncclAllGather(send[i], recv[i], elems, ncclFloat, comms[i], streams[i]));
            else if (k == "reduce_scatter")
              NCCL_CHECK(ncclReduceScatter(send[i], recv[i], elems, ncclFloat, ncclSum, comms[i], streams[i]));
            else if (i == 0)
              NCCL_CHECK(ncclSend(send[0], elems, ncclFloat, 1, comms[0], streams[0]));
            else if (i == 1)
              NCCL_CHECK(ncclRecv(recv[1], elems, ncclFloat, 0, comms[1], streams[1]));
          }
          NCCL_CHECK(ncclGroupEnd());
        };
        call(); // warm-up
        sync_all();
        const int batch = b < (size_t(1) << 24) ? 20 : 5;
        std::vector<double> t;
        for (int sample = 0; sample < 5; ++sample) {
          auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < batch; ++i)
            call();
          sync_all();
          t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / batch);
        }
        Row r;
        r.benchmark      = k;
        r.ranks          = g;
        r.ranks_per_node = g;
        r.bytes          = double(k == "all_reduce" || k == "send_recv" ? elems * 4 : elems * 4 * g);
        r.samples        = static_cast<int>(t.size());
        r.time_s         = median(t);
        rows.push_back(r);
      }
    }
    for (int i = 0; i < g; ++i) {
      CHECK(cudaSetDevice(i));
      CHECK(cudaFree(send[i]));
      CHECK(cudaFree(recv[i]));
      CHECK(cudaStreamDestroy(streams[i]));
      ncclCommDestroy(comms[i]);
    }
  }
  CHECK(cudaSetDevice(0));
}

} // namespace gpubench

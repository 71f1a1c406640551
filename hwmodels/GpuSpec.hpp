#pragma once
// One GPU model: memory, compute and host-link figures from the catalog or a spec.
// Each figure is declared once below, with its spec key (the member's name), its unit
// (a QuantityKind: bytes, bytes/s, FLOP/s, seconds), its default and its meaning; the
// struct's members and the catalog reader (read_gpu) both expand these lists, and
// `memwall list params` prints what the reader declares. Values are SI.
#include "hwmodels/kernel/Dtype.hpp"
#include "hwmodels/profile/GpuProfile.hpp"

#include <map>
#include <memory>
#include <string>

// X(key, unit, description): required in a catalog entry, defaulting to the preset's
// figure in a mapping that starts from one.
#define MEMWALL_GPU_REQUIRED_QUANTITIES(X)                                                                             \
  X(memory_bytes, bytes, "device memory a process can have: cudaMemGetInfo's total (PyTorch's total_memory)")          \
  X(hbm_peak_bw, rate, "datasheet memory bandwidth")                                                                   \
  X(hbm_achievable_bw, rate, "sustained memory bandwidth")                                                             \
  X(h2d_bw, rate, "achievable pinned host-to-device bandwidth")                                                        \
  X(d2h_bw, rate, "achievable pinned device-to-host bandwidth")
// X(key, unit, default, description)
#define MEMWALL_GPU_QUANTITIES(X)                                                                                      \
  X(kernel_overhead_s, seconds, 4e-6, "launch and tail time per kernel")                                               \
  X(context_bytes, bytes, 0, "CUDA context and library handles")                                                       \
  X(nvlink_bw, rate, 0, "GPU-to-GPU bandwidth per direction, 0 if none")                                               \
  X(kv_read_small_bytes, bytes, 64.0 * 1024 * 1024,                                                                    \
    "decode attention: the KV bytes one launch reads up to which the small-read regime holds (FlashInfer's H100 "      \
    "batch decode, 2024: calibration/research/decode-attention-bandwidth.md)")                                         \
  X(kv_read_small_latency_s, seconds, 10e-6, "decode attention reading at most kv_read_small_bytes: fixed time")       \
  X(kv_read_latency_s, seconds, 21e-6, "decode attention reading more than kv_read_small_bytes: fixed time")
// X(key, default, least, most, description): plain numbers
#define MEMWALL_GPU_NUMBERS(X)                                                                                         \
  X(matmul_efficiency, 0.7, 0, 1, "achieved fraction of peak in GEMMs")                                                \
  X(attention_efficiency, 0.5, 0, 1, "achieved fraction of peak in attention kernels")                                 \
  X(kv_read_small_share, 0.686, 0, 1,                                                                                  \
    "decode attention reading at most kv_read_small_bytes: its streaming rate as a fraction of hbm_peak_bw "           \
    "(FlashInfer's H100: 2.30 of 3.35 TB/s)")                                                                          \
  X(kv_read_share, 0.94, 0, 1,                                                                                         \
    "decode attention reading more: its streaming rate as a fraction of hbm_peak_bw (FlashInfer's H100: 3.15 of "      \
    "3.35 TB/s), never above hbm_achievable_bw")                                                                       \
  X(kv_read_fp8_factor, 0.87, 0, 1,                                                                                    \
    "decode attention over an fp8 KV cache: its streaming rate against a 16-bit cache's (FlashInfer's H100: 76 % of "  \
    "peak against 83-89 %; tensor-core GQA kernels measured 0.4-0.6)")                                                 \
  X(price_usd, 0, 0, 1e9, "indicative price per GPU in USD")                                                           \
  X(tdp_w, 0, 0, 1e5, "board power (TDP) in watts, from the datasheet: a run's power and energy; 0 = unknown")         \
  X(power_limit_w, 0, 0, 1e5, "power limit the clocks are held under (nvidia-smi -pl), in watts; 0 = the TDP")         \
  X(tensor_core_w, 0, 0, 1e5,                                                                                          \
    "board power of back-to-back bf16 GEMMs at full clock, in watts (fitted: calibration/research/power-limits.md); "  \
    "above the limit tensor-core kernels slow until the average is at it; 0 = not modelled")                           \
  X(idle_w, 0, 0, 1e5, "board power with the SMs idle at full clock, in watts (the power limit's model)")              \
  X(hbm_stream_w, 0, 0, 1e5, "board power of a device copy at hbm_achievable_bw, in watts (the power limit's model)")
// X(key, default, least, most, description): counts
#define MEMWALL_GPU_COUNTS(X)                                                                                          \
  X(sms, 0, 0, 100'000, "streaming multiprocessors (compute units); 0 = unknown")                                      \
  X(pcie_gen, 4, 1, 7, "PCIe generation of the host link")                                                             \
  X(pcie_lanes, 16, 1, 32, "PCIe lanes of the host link")                                                              \
  X(compute_capability, 0, 0, 1000,                                                                                    \
    "CUDA compute capability x 10 (90: sm_90, Hopper): which row of NCCL's per-architecture tables applies; 0 = not "  \
    "a CUDA device")

namespace memwall {

struct GpuSpec {
  std::string id;   // catalog identifier, e.g. "a100-sxm4-80gb" (public contract)
  std::string name; // marketing name
  std::string vendor;
#define MEMWALL_REQUIRED_MEMBER(key, unit, description) double key = 0;
#define MEMWALL_QUANTITY_MEMBER(key, unit, def, description) double key = def;
#define MEMWALL_NUMBER_MEMBER(key, def, least, most, description) double key = def;
#define MEMWALL_COUNT_MEMBER(key, def, least, most, description) int key = def;
  MEMWALL_GPU_REQUIRED_QUANTITIES(MEMWALL_REQUIRED_MEMBER)
  MEMWALL_GPU_QUANTITIES(MEMWALL_QUANTITY_MEMBER)
  MEMWALL_GPU_NUMBERS(MEMWALL_NUMBER_MEMBER)
  MEMWALL_GPU_COUNTS(MEMWALL_COUNT_MEMBER)
  std::map<Dtype, double> peak_flops; // dense tensor/vector peak per dtype it supports, FLOP/s
  // Fitted from microbenchmarks (calibration/); null: the efficiencies above are estimates.
  std::shared_ptr<const GpuProfile> profile;
  // Catalog id of a GPU on the same NVSwitch generation whose measured NCCL curves time
  // this GPU's collectives inside a node where its own profile measured none (scaled by
  // the two parts' nvlink_bw); empty: none taken (CollectivesFrom.hpp).
  std::string collectives_from;

  // The power the clocks are held under, and whether the tensor cores exceed it at full
  // clock (then sim/timing/PowerGovernor slows them).
  double power_limit() const { return power_limit_w > 0 ? power_limit_w : tdp_w; }
  bool power_limited() const { return tensor_core_w > 0 && power_limit() > 0 && tensor_core_w > power_limit(); }
  bool supports(Dtype d) const { return peak_flops.count(d) != 0; }
  double peak(Dtype d) const { return supports(d) ? peak_flops.at(d) : 0.0; }
};

} // namespace memwall

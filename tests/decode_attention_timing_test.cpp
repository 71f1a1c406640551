// Decode attention reads the KV cache at what decode kernels achieve by the bytes one
// launch reads, not at the HBM's sustained rate. Published points (cold L2, nvbench),
// gathered in calibration/research/decode-attention-bandwidth.md:
//   [B]   FlashInfer's blog of 2024-02-02, H100 SXM (3.35 TB/s), Figures 6, 9, 11: the
//         curve's source;
//   [ORT] onnxruntime pull request 21414, FlashAttention-2 paged decode on an H100, and
//   [I1753] flashinfer issue 1753, FlashInfer's bf16 decode on an H20 (4.0 TB/s): neither
//         used to set the curve.
#include "hwmodels/Catalog.hpp"
#include "sim/timing/KernelTiming.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/inference/InferenceKernels.hpp"
#include "workloads/model/ModelPresets.hpp"

#include <catch2/catch.hpp>

using namespace memwall;
using namespace memwall::test;

namespace {

// One launch of decode attention reading `bytes` of KV (the op's bytes), alone on its GPU.
double decode_s(const std::string& gpu, double bytes, KernelFamily family = KernelFamily::kv_read)
{
  GpuSpec g = gpu_preset(gpu);
  Op op     = memwall::kernel_op(DeviceRef{}, KernelClass::attention, Dtype::bf16, 4 * bytes / 2, bytes, 0, "attn");
  op.family = family;
  return kernel_timing(g, op).total_s(bytes);
}

} // namespace

TEST_CASE("decode_attention_on_an_h100_takes_the_time_flashinfer_published_by_kv_bytes_per_launch",
          "[timing][attention]")
{
  // [B] Fig 6 / 9: 16-bit KV, 33.5 MB at ~1.35 TB/s (24.8 us), 134 MB at ~2.1 (63.8 us),
  // 1.07 GB at ~2.96 (362 us). ~4 FLOP a byte: memory-bound at any of them.
  CHECK(decode_s("h100-sxm-80gb", 33.5e6) == Approx(24.8e-6).epsilon(0.10));
  CHECK(decode_s("h100-sxm-80gb", 134e6) == Approx(63.8e-6).epsilon(0.10));
  CHECK(decode_s("h100-sxm-80gb", 1.07e9) == Approx(362e-6).epsilon(0.05));
  // [B] Fig 11: the same 64K-token sequence, fp8 KV (537 MB) in ~215 us against 16-bit's
  // ~360 us: 1.67x, not the 2x half the bytes would give at the same rate.
  const double fp16 = decode_s("h100-sxm-80gb", 1.07e9), fp8 = decode_s("h100-sxm-80gb", 537e6, KernelFamily::kv_read_fp8);
  CHECK(fp8 == Approx(215e-6).epsilon(0.10));
  CHECK(fp16 / fp8 == Approx(1.67).epsilon(0.08));
}

TEST_CASE("decode_attention_times_hold_for_kernels_and_gpus_the_curve_was_not_set_from", "[timing][attention]")
{
  // [ORT] FlashAttention-2 paged decode, H100, batch 64: 33 MiB at 1.24 TB/s (27.9 us),
  // 65 MiB at 1.59 TB/s (42.9 us). Within 15 %.
  CHECK(decode_s("h100-sxm-80gb", 33 * 1048576.0) == Approx(33 * 1048576.0 / 1.24e12).epsilon(0.15));
  CHECK(decode_s("h100-sxm-80gb", 65 * 1048576.0) == Approx(65 * 1048576.0 / 1.59e12).epsilon(0.15));
  // [I1753] FlashInfer bf16 decode on an H20 (the H100's shape scaled by its 4.0 TB/s):
  // 128 x 1K tokens, 128/16 heads (1.07 GB) in 0.339 ms; 128 x 2K (2.15 GB) in 0.633 ms.
  CHECK(decode_s("h20", 1.07e9) == Approx(0.339e-3).epsilon(0.12));
  CHECK(decode_s("h20", 2.15e9) == Approx(0.633e-3).epsilon(0.12));
}

TEST_CASE("an_attention_kernel_without_decode_queries_streams_at_the_hbms_rate", "[timing][attention]")
{
  // A prefill's attention (no kv_read family) is timed as before: bytes at
  // hbm_achievable_bw, beside its FLOPs at attention_efficiency of the peak.
  GpuSpec g = gpu_preset("h100-sxm-80gb");
  Op op     = memwall::kernel_op(DeviceRef{}, KernelClass::attention, Dtype::bf16, 0, 134e6, 0, "attn");
  CHECK(kernel_timing(g, op).memory_bw == g.hbm_achievable_bw);
  CHECK_FALSE(kernel_timing(g, op).kernel_paced);
}

TEST_CASE("an_iteration_with_decode_queries_marks_its_attention_as_kv_reads_by_the_caches_width",
          "[timing][attention][inference]")
{
  // SeqWork {tokens, context, samples}: a decode is one token over a cache; a prefill on an
  // empty cache has no cache to read; a chunked batch mixing both reads the decodes' caches.
  ModelSpec m = model_preset("llama-3-8b");
  InferenceConfig c;
  InferenceKernels k(m, c);
  CHECK(k.plan({{1, 1000, true}}).layer.attn.family == KernelFamily::kv_read);
  CHECK(k.plan({{512, 0, true}}).layer.attn.family == KernelFamily::generic);
  CHECK(k.plan({{512, 0, true}, {1, 1000, true}}).layer.attn.family == KernelFamily::kv_read);
  c.kv_dtype = Dtype::fp8;
  InferenceKernels k8(m, c);
  CHECK(k8.plan({{1, 1000, true}}).layer.attn.family == KernelFamily::kv_read_fp8);
}

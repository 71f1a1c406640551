// Decode attention reads the KV cache at what decode kernels achieve by the bytes one
// launch reads, not at the HBM's sustained rate. Published points (cold L2, nvbench),
// gathered in calibration/research/decode-attention-bandwidth.md:
//   [B]   FlashInfer's blog of 2024-02-02, H100 SXM (3.35 TB/s), Figures 6, 9, 11: the
//         curve's source;
//   [ORT] onnxruntime pull request 21414, FlashAttention-2 paged decode on an H100;
//   [FD]  PyTorch's Flash-Decoding blog (2023), A100 80GB;
//   [I1753] flashinfer issue 1753, FlashInfer's bf16 decode on an H20 (4.0 TB/s): none
//         used to set the curve.
#include "analysis/Hdf5Table.hpp"
#include "hwmodels/Catalog.hpp"
#include "sim/timing/KernelTiming.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/inference/InferenceKernels.hpp"
#include "workloads/model/ModelPresets.hpp"

#include <catch2/catch.hpp>

#include <H5Cpp.h>

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
  const double fp16 = decode_s("h100-sxm-80gb", 1.07e9),
               fp8  = decode_s("h100-sxm-80gb", 537e6, KernelFamily::kv_read_fp8);
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
  // PyTorch's Flash-Decoding blog (2023), A100 80GB: 67 MB a launch in 56-78 us over its
  // shapes (the H100's curve scaled by the A100's 2.04 TB/s).
  CHECK(decode_s("a100-sxm4-80gb", 67e6) >= 56e-6 * 0.99);
  CHECK(decode_s("a100-sxm4-80gb", 67e6) <= 78e-6);
  // From ~1 GB the rate is the GPU's hbm_achievable_bw (the H20's an estimate).
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
  // Unfused attention (scores written and read) and FlexGen's attention over KV kept on the
  // host are not FlashInfer's kernels: generic.
  InferenceConfig unfused;
  unfused.flash_attention = false;
  CHECK(InferenceKernels(m, unfused).plan({{1, 1000, true}}).layer.attn.family == KernelFamily::generic);
  InferenceConfig flexgen;
  flexgen.kv_off.cpu = 1;
  CHECK(InferenceKernels(m, flexgen).plan({{1, 1000, true}}).layer.attn.family == KernelFamily::generic);
}

namespace {

// The replayed time of the last iteration's attention of layer 31, and its bytes.
std::pair<double, double> last_decode_attention(const std::string& name, const std::string& kv_dtype)
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: llama-3-8b}\n"
                   "inference: {kv_dtype: " +
                       kv_dtype + ", batch: 256, prompt_len: 1024, output_len: 3}\n");
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  H5::H5File f(h5, H5F_ACC_RDONLY);
  H5::Group g                    = f.openGroup("/ops");
  std::vector<std::string> names = memwall::read_texts(g, "name");
  std::vector<double> bytes = memwall::read_numbers(g, "bytes"), start = memwall::read_numbers(g, "start_s"),
                      end = memwall::read_numbers(g, "end_s");
  std::pair<double, double> last{0, 0};
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == "L31.attn")
      last = {end[i] - start[i], bytes[i]};
  return last;
}

} // namespace

TEST_CASE("a_large_batch_decode_step_waits_on_the_attention_kernels_reads_of_the_cache",
          "[timing][attention][inference]")
{
  // Llama-3-8B on one H100, 256 sequences of ~1,026 tokens: a layer's decode attention
  // reads 256 x 1,026 x 8 KV heads x 128 x 2 (K and V) elements, 1.08 GB in 16 bits and
  // 0.54 GB in fp8, FlashInfer's 1 x 64K sizes of Fig 11. Replayed, each launch takes the
  // curve's time for its bytes, 21 us + B / (0.94 x 3.35 TB/s) (x 0.87 for fp8): fp8 makes
  // the step's attention ~1.67x faster, not the 2x half the bytes would at one rate.
  auto [t16, b16]   = last_decode_attention("decode16", "bf16");
  auto [t8, b8]     = last_decode_attention("decode8", "fp8");
  const double kv16 = 256.0 * 1026 * 8 * 128 * 2 * 2;
  CHECK(b16 == Approx(kv16).epsilon(0.01)); // the cache, the queries and the new token's KV
  CHECK(b8 == Approx(kv16 / 2).epsilon(0.01));
  CHECK(t16 == Approx(21e-6 + b16 / (0.94 * 3.35e12)).epsilon(0.01));
  CHECK(t8 == Approx(21e-6 + b8 / (0.94 * 0.87 * 3.35e12)).epsilon(0.01));
  CHECK(t16 / t8 == Approx(1.67).epsilon(0.04));
}

// SGLang: the fused kernels InferenceKernels plans (as vLLM's, FlashInfer or FA3
// attention over a token pool), RadixAttention's prefix cache, and its token pool sized
// as the release of `inference.engine_release` sized it (calibration/research/
// sglang-kv-accounting.md, read from SGLang's python/sglang/srt: server_args.py,
// model_executor/model_runner.py).
//
// SGLang runs no profile forward: ModelRunner reads the free memory after the distributed
// init (F0: the CUDA context and NCCL's buffers gone) and after loading the weights (F1),
// and gives the pool rest = F1 - F0 x (1 - mem_fraction_static), that is
// mem_fraction_static x F0 - weights; activations, CUDA graphs and the req_to_token pool
// live in the other (1 - mem_fraction_static) x F0.
#include "base/Quantity.hpp"
#include "base/ReleaseNumber.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace memwall {
namespace {

constexpr double MiB = 1024.0 * 1024.0, GiB = 1024.0 * MiB;

// The rule a release's ServerArgs picks mem_fraction_static and the chunk size by.
enum class SglangRule {
  by_tp,         // 0.4.0-0.4.5.post2: by tp alone
  over_80gb,     // 0.4.5.post3-0.4.6.post1: cards over 80 GB keep 13 GiB back
  h200,          // 0.4.6.post2-0.4.7: cards over 96 GB keep max(48 GB x (1 - f), 18 GiB)... back
  reserved_v047, // 0.4.7.post1-0.5.2: a reserve by card size and tp x pp
  reserved_v053  // 0.5.3-0.5.6: a reserve from the chunk size and CUDA graphs' batch
};

struct SglangRelease {
  ReleaseNumber release;
  SglangRule rule = SglangRule::reserved_v053;
  int pool_rows   = 2048; // the req_to_token pool's rows at most sequences (2049 before 0.4.7)
};

// gpu_mem in ServerArgs is the card's total in MiB (memwall: CUDA's total).
double tp_table(int64_t tp) { return tp >= 16 ? 0.79 : tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88; }

struct Defaults {
  double fraction     = 0.88;
  int64_t chunk       = 8192; // chunked_prefill_size
  int64_t graph_batch = 160;  // cuda_graph_max_bs
};

Defaults server_args(const SglangRelease& s, double memory_bytes, int64_t tp)
{
  const double mem = memory_bytes / MiB, gib = memory_bytes / GiB;
  Defaults d;
  switch (s.rule) {
    case SglangRule::by_tp:
      d.fraction = tp_table(tp);
      d.chunk    = mem < 25000 ? 2048 : 8192;
      break;
    case SglangRule::over_80gb:
      d.fraction = mem <= 81920 ? tp_table(tp) : (mem - 13 * 1024) / mem;
      d.chunk    = mem < 25000 ? 2048 : 8192;
      break;
    case SglangRule::h200: {
      double f = mem <= 81920 ? tp_table(tp) : 0.88;
      if (mem > 96 * 1024)
        f = std::min(f + 48 * 1024 * (1 - f) / mem, (mem - 18 * 1024) / mem);
      d.fraction = f;
      d.chunk    = mem < 25000 ? 2048 : 8192;
      break;
    }
    case SglangRule::reserved_v047: {
      const double P  = static_cast<double>(tp);
      double reserved = gib < 35    ? (2.8 + P / 10) * 1024
                        : gib < 90  ? (9.5 + P / 2) * 1024
                        : gib < 160 ? (12 + P / 2) * 1024
                                    : 32 * 1024;
      d.fraction      = std::round((mem - reserved) / mem * 1000) / 1000;
      d.chunk         = gib < 35 ? 2048 : gib < 160 ? 8192 : 16384;
      break;
    }
    case SglangRule::reserved_v053: {
      const bool small_tp = tp < 4;
      if (gib < 20)
        d.chunk = 2048, d.graph_batch = 8;
      else if (gib < 35)
        d.chunk = 2048, d.graph_batch = small_tp ? (s.release.from({0, 5, 6}) ? 24 : 16) : 80;
      else if (gib < 60)
        d.chunk = 4096, d.graph_batch = small_tp ? 32 : 160;
      else if (gib < 160)
        d.chunk = 8192, d.graph_batch = small_tp ? 256 : 512;
      else
        d.chunk = 16384, d.graph_batch = 512;
      double reserved = 512 + std::max<double>(static_cast<double>(d.chunk), 2048) * 1.5 +
                        static_cast<double>(d.graph_batch) * 2 + static_cast<double>(tp) / 8 * 1024;
      if (gib > 60)
        reserved = std::max(reserved, 10240.0);
      d.fraction = std::round((mem - reserved) / mem * 1000) / 1000;
      break;
    }
  }
  return d;
}

class SglangEngine : public InferenceEngine {
public:
  SglangEngine(SglangRelease r, double fraction) : r_(r), fraction_(fraction) {}

  std::string default_scheduler(const std::string&) const override { return "continuous"; }
  int64_t default_block_size() const override { return 1; } // page_size 1: a token pool
  BatchDefaults batch_defaults(const GpuSpec& gpu, const std::string&, int64_t) const override
  {
    Defaults d = server_args(r_, gpu.memory_bytes, 1);
    BatchDefaults b;
    b.chunked_prefill        = true;
    b.max_num_batched_tokens = d.chunk;
    // max_running_requests = min(pool tokens / 2, the req_to_token pool's rows): the rows
    // are min(max(tokens / context x 512, 2048), 4096), 2048 for any pool under 4
    // contexts' worth (what a spec's own max_num_seqs replaces).
    b.max_num_seqs = r_.pool_rows;
    b.whose        = "SGLang " + r_.release.str() + "'s defaults (chunked_prefill_size by GPU memory)";
    return b;
  }
  std::string summary_prefix() const override { return "SGLang " + r_.release.str() + ", "; }
  void check(ParamReader& r, const InferenceConfig& c, const ModelSpec&) const override
  {
    if (r.has("gpu_memory_utilization"))
      r.fail("gpu_memory_utilization",
             "engine sglang sizes its pool by mem_fraction_static (inference.mem_fraction_static)");
    if (c.weights_off.any() || c.kv_off.any() || c.act_off.any() || c.gpu_batches > 1)
      r.fail("offload", "engine sglang: offload here is FlexGen's (engine vllm)");
  }
  void plan(const ModelSpec&, const InferenceConfig&, const std::vector<SeqWork>&, IterationKernels&) const override {}

  StartupBudget kv_budget(const StartupInputs& in) const override
  {
    const double fraction = fraction_ > 0 ? fraction_ : server_args(r_, in.total, in.tp).fraction;
    // F0: free after the distributed init (the context, and NCCL's buffers at tp > 1:
    // the torch group and the custom all-reduce's, as the logs' "Init torch distributed
    // ends" shows them); the rope cache comes with the weights.
    const double f0 = in.total - in.context - (in.tp > 1 ? nccl_communicator_bytes(in.nccl_channels) : 0.0);
    StartupBudget b;
    b.fraction      = fraction;
    b.weights       = in.weights + in.rope_cache;
    b.outside_torch = in.total - f0;
    b.kv_bytes      = fraction * f0 - b.weights;
    char line[320];
    std::snprintf(line, sizeof line,
                  "SGLang %s: mem_fraction_static %.3f x %s free after the distributed init (%s less the context "
                  "and NCCL's %s) - weights %s = %s",
                  r_.release.str().c_str(), fraction, format_gib(f0).c_str(), format_gib(in.total).c_str(),
                  format_gib(b.outside_torch).c_str(), format_gib(b.weights).c_str(), format_gib(b.kv_bytes).c_str());
    b.how = line;
    return b;
  }

  std::string refuses_start(const StartupBudget& b, int64_t kv_tokens, int64_t, int64_t, double) const override
  {
    if (b.kv_bytes > 0 && kv_tokens > 0)
      return ""; // a request longer than the pool is refused when it comes (max_req_len)
    std::string text = "Not enough memory. Please try to increase --mem-fraction-static.";
    if (r_.release.from({0, 5, 6})) {
      char value[96];
      std::snprintf(value, sizeof value, " Current value: self.server_args.mem_fraction_static=%g", b.fraction);
      text += value;
    }
    return text;
  }

private:
  SglangRelease r_;
  double fraction_; // the spec's mem_fraction_static, or 0: the release's default
};

// One row per change of the defaults, oldest first.
std::optional<SglangRelease> release_of(const std::string& text, std::string& why)
{
  std::optional<ReleaseNumber> v = ReleaseNumber::parse(text);
  if (!v) {
    why = "expected an SGLang release number such as 0.4.6.post5 or 0.5.6";
    return std::nullopt;
  }
  struct Row {
    ReleaseNumber first;
    SglangRule rule;
    int rows;
  };
  static const Row rows[] = {{{0, 4, 0}, SglangRule::by_tp, 2049},
                             {{0, 4, 5, 0, 3}, SglangRule::over_80gb, 2049}, // 0.4.5.post3
                             {{0, 4, 6, 0, 2}, SglangRule::h200, 2049},
                             {{0, 4, 7}, SglangRule::h200, 2048},
                             {{0, 4, 7, 0, 1}, SglangRule::reserved_v047, 2048},
                             {{0, 5, 3}, SglangRule::reserved_v053, 2048}};
  if (!v->from(rows[0].first) || v->from({0, 5, 7})) {
    why = v->str() + " is not modelled: the accounting of SGLang 0.4.0 to 0.5.6 is";
    return std::nullopt;
  }
  SglangRelease s;
  s.release = *v;
  for (const Row& r : rows)
    if (v->from(r.first))
      s.rule = r.rule, s.pool_rows = r.rows;
  return s;
}

const bool registered = inference_engine_registry().add(
    "sglang",
    "SGLang: the fused kernels vLLM's engine runs, continuous batching with chunked prefill, a token pool "
    "(page size 1) with RadixAttention's prefix cache, sized without a profile run: mem_fraction_static of the "
    "free memory after the CUDA context and NCCL's buffers, less the weights (activations and CUDA graphs live in "
    "the rest), each default as SGLang 0.4.0 to 0.5.6 set it (inference.engine_release). Where a spec does not say: "
    "mem_fraction_static by tp (0.4.0-0.4.5) or from a reserve by card size (0.4.7.post1-0.5.2) or from the chunk "
    "size and CUDA graphs' batch (0.5.3+), chunked_prefill_size by GPU memory (2,048 under 25-35 GiB, 8,192, "
    "16,384 over 160 GiB from 0.4.7.post1), 2,048 running requests",
    [](ParamReader& r) {
      std::string text =
          r.text("engine_release", "0.5.6",
                 "engine sglang: the SGLang release whose defaults and pool sizing apply (0.4.0 to 0.5.6)");
      double fraction = r.number("mem_fraction_static", 0,
                                 "engine sglang: the share of the free memory after the distributed init that weights "
                                 "and the token pool may take (0: the release's default by GPU and tp)",
                                 0.0, 1.0);
      std::string why;
      std::optional<SglangRelease> s = release_of(text, why);
      if (!s)
        r.fail("engine_release", why);
      return std::make_unique<SglangEngine>(*s, fraction);
    });

} // namespace
} // namespace memwall

#include "workloads/inference/InferenceSection.hpp"

#include "workloads/inference/FlexgenPlacement.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/requests/PoissonRequests.hpp"
#include "workloads/inference/requests/RequestTrace.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"
#include "workloads/model/InputLimits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace memwall {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string fmt_percent(double v)
{
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// `fraction` of a category off the GPU, all in host memory or all on NVMe.
OffShares on_one_tier(const std::string& where, double fraction)
{
  OffShares s;
  if (where == "cpu")
    s.cpu = fraction;
  else if (where == "nvme")
    s.nvme = fraction;
  return s;
}

// FlexGen's policy: {weights: [gpu, cpu, disk], kv: [...], activations: [...]} in percent,
// each list summing to 100. Weights go whole tensor by whole tensor, as FlexGen places
// them (FlexgenPlacement.hpp); KV and activations split by the percentages.
void read_percent(ParamReader& o, InferenceConfig& c, const ModelSpec& m)
{
  YAML::Node n = o.take("percent", "{weights: [gpu, cpu, disk], kv: [...], activations: [...]} in %",
                        "FlexGen's policy: where each category lives, in percent of it on the GPU, in host memory "
                        "and on NVMe (each list sums to 100; weights placed whole tensor by tensor as FlexGen's "
                        "init_weight_list does); instead of weights/kv and their fractions",
                        "none");
  if (!n.IsDefined() || n.IsNull())
    return;
  ParamReader p = o.nested(n, "percent");
  // `whole_tensors`: the category is placed as FlexGen places weights, tensor by tensor.
  auto split = [&](const std::string& key, OffShares& out, bool whole_tensors) {
    YAML::Node v = p.take(key, "list of 3 numbers: [gpu, cpu, disk] in %",
                          "percent of " + key + " on the GPU, in host memory, on NVMe", "[100, 0, 0]");
    if (!v.IsDefined() || v.IsNull())
      return;
    if (!v.IsSequence() || v.size() != 3)
      p.fail(key, "expected [gpu, cpu, disk] percentages, e.g. [20, 80, 0]");
    double pct[3];
    for (size_t i = 0; i < 3; ++i) {
      double x = -1;
      try {
        x = v[i].as<double>();
      } catch (const YAML::Exception&) {
        p.fail(key, "expected [gpu, cpu, disk] percentages, e.g. [20, 80, 0]");
      }
      if (!(x >= 0 && x <= 100))
        p.fail(key, "each percentage must be in [0, 100]");
      pct[i] = x;
    }
    if (std::fabs(pct[0] + pct[1] + pct[2] - 100) > 1e-6)
      p.fail(key, "[" + fmt_percent(pct[0]) + ", " + fmt_percent(pct[1]) + ", " + fmt_percent(pct[2]) + "] sums to " +
                      fmt_percent(pct[0] + pct[1] + pct[2]) + ", not 100");
    out.cpu  = pct[1] / 100;
    out.nvme = pct[2] / 100;
    if (whole_tensors)
      out = flexgen_weight_placement(m, pct[1], pct[2]);
  };
  split("weights", c.weights_off, true);
  split("kv", c.kv_off, false);
  split("activations", c.act_off, false);
  p.finish();
}

// A length is an integer (fixed) or a mapping {dist: uniform|exponential, min, max, mean}.
LengthDistribution read_length(ParamReader& parent, const std::string& key, int64_t def, const std::string& what)
{
  LengthDistribution d;
  d.value      = def;
  YAML::Node n = parent.take(key, "integer, or {dist: fixed|uniform|exponential, value, min, max, mean}",
                             what + " tokens per request", str(def));
  // A bare number is the fixed length; absent, every key reads its default (and so is
  // documented whatever the spec says).
  // (yaml-cpp's Node assignment writes through to the node: the wrapper is a new one.)
  const bool given  = n.IsDefined() && !n.IsNull();
  const bool scalar = given && n.IsScalar();
  YAML::Node wrapped;
  if (scalar)
    wrapped["value"] = n;
  ParamReader r = parent.nested(scalar ? wrapped : given ? n : YAML::Node(), key);
  d.dist        = r.choice("dist", "fixed", {"fixed", "uniform", "exponential"}, "length distribution");
  d.value       = r.integer("value", def, "fixed: the length", 1, "", limits::tokens);
  d.min         = r.integer("min", 1, "uniform / exponential: the smallest length", 1, "", limits::tokens);
  d.max =
      r.integer("max", std::max<int64_t>(def, 1), "uniform / exponential: the largest length", 1, "", limits::tokens);
  d.mean = r.number("mean", static_cast<double>(def), "exponential: the mean before clipping to [min, max]", 1.0,
                    static_cast<double>(limits::tokens));
  if (d.max < d.min)
    r.fail("max", "max " + str(d.max) + " is below min " + str(d.min));
  r.finish();
  return d;
}

std::vector<Request> read_requests(ParamReader& r, InferenceConfig& c, const std::string& spec_dir)
{
  bool batch   = r.has("batch") || r.has("prompt_len") || r.has("output_len");
  bool trace   = r.has("trace");
  bool poisson = r.has("poisson");
  if (int(batch) + int(trace) + int(poisson) > 1)
    r.fail(trace ? "trace" : "poisson", "give one source of requests: batch/prompt_len/output_len, trace, or poisson");
  int64_t b      = r.integer("batch", 1, "fixed batch: sequences generated together, all arriving at t = 0", 1, "",
                             limits::requests);
  int64_t prompt = r.integer("prompt_len", 512, "fixed batch: prompt tokens per sequence", 1, "", limits::tokens);
  int64_t output = r.integer("output_len", 128, "fixed batch: generated tokens per sequence", 1, "", limits::tokens);
  YAML::Node t   = r.take("trace", "path",
                          "request trace: CSV with a header (arrival_time|TIMESTAMP, "
                            "prompt_tokens|ContextTokens, output_tokens|GeneratedTokens) or JSONL",
                          "none");
  if (trace && (!t.IsScalar() || t.Scalar().empty()))
    r.fail("trace", "expected the path of a .csv or .jsonl file");
  std::string path = trace ? t.Scalar() : "";
  double speedup   = r.number("trace_speedup", 1.0,
                              "trace: its arrival times divided by this (2: the same requests twice as often; what "
                                "serve-capacity varies for a trace)",
                              limits::min_speedup, limits::max_speedup);
  if (r.has("trace_speedup") && !trace)
    r.fail("trace_speedup", "scales the arrival times of inference.trace; this spec has no trace");
  ParamReader p = r.section("poisson", "synthetic requests with Poisson arrivals");
  PoissonConfig pc;
  pc.rate     = p.number("rate", pc.rate, "arrivals per second", limits::min_rate, limits::max_rate);
  pc.requests = p.integer("requests", pc.requests, "number of requests", 1, "", limits::requests);
  pc.seed     = static_cast<uint64_t>(
      p.integer("seed", 1, "random seed (same seed, same requests)", 0, "", 9'000'000'000'000'000));
  pc.prompt = read_length(p, "prompt_len", 512, "prompt");
  pc.output = read_length(p, "output_len", 128, "output");
  p.finish();
  if (trace) {
    c.source        = "trace";
    c.trace_speedup = speedup;
    std::filesystem::path f(path);
    if (f.is_relative() && !spec_dir.empty())
      f = std::filesystem::path(spec_dir) / f;
    c.trace_path                  = f.lexically_normal().string();
    std::vector<Request> requests = read_request_trace(c.trace_path);
    for (Request& q : requests)
      q.arrival_s /= speedup;
    return requests;
  }
  if (poisson) {
    c.source       = "poisson";
    c.prompt_dist  = pc.prompt;
    c.poisson_rate = pc.rate;
    c.output_dist  = pc.output;
    return poisson_requests(pc);
  }
  c.source = "batch";
  return fixed_batch(b, prompt, output);
}

// Refuses what cannot run; marks the requests the server will refuse on arrival.
void check(ParamReader& r, InferenceConfig& c, int64_t gpus, const ModelSpec& m)
{
  if (m.heads % c.tp != 0)
    r.fail("tp", "tp = " + str(c.tp) + " does not divide the model's " + str(m.heads) + " attention heads");
  if (c.kv_heads_ok(m) == false)
    r.fail("tp", "tp = " + str(c.tp) + " and the model's " + str(m.kv_heads) +
                     " KV heads must divide one another (KV heads are split, or replicated when fewer than tp)");
  if (c.ep > 1 && !m.moe.enabled())
    r.fail("ep", "expert parallelism needs a mixture-of-experts model (model.num_experts > 0)");
  if (c.ep > 1 && c.ep % c.tp != 0)
    r.fail("ep",
           "ep = " + str(c.ep) + " must be 1 or a multiple of tp = " + str(c.tp) +
               " (tp: experts spread over the tp GPUs; tp x d: over d attention data-parallel groups of tp GPUs)");
  if (c.ep > 1 && m.moe.experts % c.ep != 0)
    r.fail("ep", "ep = " + str(c.ep) + " does not divide the model's " + str(m.moe.experts) + " experts");
  if (c.replica_gpus() != gpus)
    r.fail(
        c.attention_dp() > 1 ? "ep" : "tp",
        "one model replica runs on " + std::string(c.attention_dp() > 1 ? "ep = " + str(c.ep) : "tp = " + str(c.tp)) +
            " GPUs but the hardware has " + str(gpus) + "; set hardware.gpus_per_node (and nodes) to the GPUs it uses");
  const BatchLimits& batch = c.scheduler->limits();
  if (!batch.chunked_prefill && batch.max_num_batched_tokens < c.max_model_len)
    r.fail("max_num_batched_tokens",
           str(batch.max_num_batched_tokens) + " is below max_model_len " + str(c.max_model_len) +
               ": a long prompt could never be scheduled; raise it or set chunked_prefill: true");
  if (c.gpu_memory_utilization <= 0 || c.gpu_memory_utilization > 1)
    r.fail("gpu_memory_utilization", "must be in (0, 1]");
  if (c.max_model_len > m.max_seq_len)
    r.fail("max_model_len", str(c.max_model_len) + " exceeds the model's context of " + str(m.max_seq_len) +
                                " tokens (a model extended to longer contexts: set model.max_seq_len, e.g. --set "
                                "model.max_seq_len=" +
                                str(c.max_model_len) + ")");
  if (c.cpu_attention && m.mla.enabled())
    r.fail("offload", "attention: cpu is not modelled for multi-head latent attention (its KV is a compressed latent)");
  if (c.cpu_attention && !c.kv_off.any())
    r.fail("offload", "attention: cpu computes attention over the KV cache kept off the GPU, so it needs KV in host "
                      "memory or on NVMe (the KV is on the GPU)");
  int64_t refused = 0;
  for (Request& q : c.requests) {
    // Trace rows are named by file and line; generated requests by the key that made them.
    auto fail = [&](const std::string& key, const std::string& msg) {
      if (q.row > 0)
        throw InputError(c.trace_path + ":" + str(q.row) + ": " + msg);
      r.fail(key, (c.source == "poisson" ? "request " + str(q.id) + ": " : std::string()) + msg);
    };
    // A trace's or a Poisson draw's over-long request is refused on arrival and counted,
    // as vLLM's server answers it; a fixed batch of them is a mistake in the spec.
    if (q.prompt_tokens + q.output_tokens > c.max_model_len && c.source == "batch")
      fail("prompt_len", "prompt " + str(q.prompt_tokens) + " + output " + str(q.output_tokens) +
                             " tokens exceed the context of " + str(c.max_model_len) +
                             " tokens (inference.max_model_len)");
    if (q.prompt_tokens + q.output_tokens > c.max_model_len) {
      q.reject = q.prompt_tokens > c.max_model_len ? RejectReason::prompt_too_long : RejectReason::exceeds_context;
      ++refused;
      continue;
    }
    if (q.prompt_tokens < c.kv_manager->shared_prefix())
      fail("shared_prefix", "prompt of " + str(q.prompt_tokens) + " tokens is shorter than the shared prefix of " +
                                str(c.kv_manager->shared_prefix()) + " tokens");
  }
  if (refused == static_cast<int64_t>(c.requests.size()))
    r.fail(c.source, "every one of the " + str(refused) + " requests has prompt + output over the context of " +
                         str(c.max_model_len) + " tokens (inference.max_model_len): nothing to serve");
}

} // namespace

InferenceConfig read_inference_section(ParamReader& r, int64_t gpus, const ModelSpec& model, const GpuSpec& gpu,
                                       const std::string& spec_dir)
{
  InferenceConfig c;
  c.requests = read_requests(r, c, spec_dir);
  c.tp = r.integer("tp", 1, "tensor-parallel degree (Megatron split, 2 all-reduces per layer); = the GPUs used", 1);
  c.ep = r.integer("ep", 1,
                   "MoE: experts spread whole over this many GPUs instead of split by tensor (vLLM's "
                   "enable_expert_parallel). 1; tp: over the replica's tp GPUs, outputs summed by the tp all-reduce; "
                   "tp x d: the replica is d attention data-parallel groups of tp GPUs, each with its own batch and KV "
                   "cache, whose MoE layers dispatch and combine tokens by all-to-all over the ep GPUs",
                   1);
  std::string w     = r.choice("weight_dtype", "fp16", {"fp16", "bf16", "fp8", "int8", "int4", "fp4"},
                               "weight precision; int8/int4 are weight-only (dequantized inside the GEMM); fp4 "
                                   "(NVFP4/MXFP4) runs fp4 GEMMs where the GPU has fp4 tensor cores, else weight-only");
  c.weight_dtype    = *dtype_from_name(w);
  c.act_dtype       = c.weight_dtype == Dtype::bf16 ? Dtype::bf16 : Dtype::fp16;
  std::string kv    = r.choice("kv_dtype", "auto", {"auto", "fp16", "bf16", "fp8", "int8"},
                               "KV-cache precision; auto: the activation precision");
  c.kv_dtype        = kv == "auto" ? c.act_dtype : *dtype_from_name(kv);
  c.flash_attention = r.flag("flash_attention", true, "fused attention kernels (off: the scores go through HBM)");
  c.gpu_memory_utilization =
      r.number("gpu_memory_utilization", 0.9,
               "fraction of GPU memory the server may use; the KV cache gets what is left", 0.0, 1.0);
  c.max_model_len = r.integer("max_model_len", model.max_seq_len, "longest prompt + output allowed", 1,
                              "the model's max_seq_len", limits::tokens);
  // The engine, scheduler and KV manager read their own keys; what needs them asks the
  // objects (InferenceConfig). The engine's release sets the others' defaults (vLLM's
  // depend on the GPU and on whether it serves arrivals or one offline batch).
  const auto& engines    = inference_engine_registry();
  const std::string name = r.choice("engine", engines.default_name(), engines.names(),
                                    "how the model is served: vllm (fused kernels, paged KV, continuous batching) or "
                                    "hf (Hugging Face generate() in eager PyTorch, one static batch); see `memwall "
                                    "list engines`");
  c.engine               = engines.make(name, r);
  EngineDefaults d;
  d.batch                = c.engine->batch_defaults(gpu, c.source, c.max_model_len);
  d.max_model_len        = c.max_model_len;
  d.block_size           = c.engine->default_block_size();
  const auto& schedulers = batch_scheduler_registry();
  const std::string scheduler =
      r.choice("scheduler", c.engine->default_scheduler(c.source), schedulers.names(),
               "batching: static (a batch runs to its longest output) or continuous (vLLM); see `memwall list "
               "schedulers`");
  c.scheduler               = schedulers.make(scheduler, r, d);
  const auto& managers      = kv_manager_registry();
  const std::string manager = r.choice("kv_manager", managers.default_name(), managers.names(),
                                       "paged blocks (vLLM) or a contiguous reservation of max_model_len per request; "
                                       "see `memwall list kv-managers`");
  c.kv_manager              = managers.make(manager, r, d);
  c.gpu_batches             = r.integer("gpu_batches", 1,
                                        "GPU batches each iteration's sequences are split into, run one after another through "
                                                    "each layer while its weights are on the GPU (FlexGen's num_gpu_batches)",
                                        1, "", 4096);
  ParamReader o             = r.section("offload", "FlexGen-style offload of weights and KV cache, streamed per layer");
  std::string w_at          = o.choice("weights", "none", {"none", "cpu", "nvme"}, "where offloaded weights live");
  double wf                 = o.number("weights_fraction", 1.0, "part of each layer's weights off the GPU", 0.0, 1.0);
  std::string k_at          = o.choice("kv", "none", {"none", "cpu", "nvme"}, "where offloaded KV cache lives");
  double kf                 = o.number("kv_fraction", 1.0, "part of each sequence's KV cache off the GPU", 0.0, 1.0);
  if ((wf <= 0 || wf > 1) && w_at != "none")
    o.fail("weights_fraction", "must be in (0, 1]");
  if ((kf <= 0 || kf > 1) && k_at != "none")
    o.fail("kv_fraction", "must be in (0, 1]");
  c.weights_off = on_one_tier(w_at, wf);
  c.kv_off      = on_one_tier(k_at, kf);
  bool tiers    = o.has("weights") || o.has("kv") || o.has("weights_fraction") || o.has("kv_fraction");
  if (o.has("percent") && tiers)
    o.fail("percent", "give either percent or weights/kv with their fractions, not both");
  read_percent(o, c, model);
  c.cpu_attention        = o.choice("attention", "gpu", {"gpu", "cpu"},
                                    "where attention over offloaded KV runs: gpu (the KV streams over PCIe) or cpu "
                                           "(FlexGen's cpu_cache_compute: queries down, outputs up; KV on NVMe is read into "
                                           "host memory first)") == "cpu";
  c.offload_pinned_given = o.has("pinned");
  c.offload_pinned       = o.flag("pinned", true,
                                  "offloaded weights and KV in page-locked host memory (FlexGen's pin_weight); false: "
                                        "copies staged through the driver's pinned buffer at hardware.node.pageable_copy_bw");
  o.finish();
  // Every key is read: what is left and another implementation reads is refused naming it.
  engines.refuse_others_keys(name, r);
  schedulers.refuse_others_keys(scheduler, r);
  managers.refuse_others_keys(manager, r);
  check(r, c, gpus, model);
  c.engine->check(r, c, model);
  r.finish();
  return c;
}

} // namespace memwall

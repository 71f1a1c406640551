#include "workloads/inference/engine/VllmRelease.hpp"

namespace memwall {

namespace {

// One row per change, oldest first; a release takes the last row at or before it. Read
// from vLLM's source at 0.2.4, 0.2.5 (pull request 2031), 0.2.6, 0.2.7, 0.3.0, 0.3.1,
// 0.4.0, 0.4.3, 0.6.1, 0.6.4, 0.6.5, 0.7.3, 0.8.5, 0.9.2, 0.10.2 and 0.11.0; the releases
// between are taken to be as the nearest one read before them
// (calibration/research/vllm-kv-accounting.md says which file and function each comes from).
// The rules of `base` (the row before, or none) from release `first` on, until changed.
VllmAccounting starting(VllmAccounting base, const char* first, const char* covers)
{
  base.covers  = covers;
  base.release = *ReleaseNumber::parse(first);
  return base;
}

std::vector<VllmAccounting> rules()
{
  std::vector<VllmAccounting> r;
  // Worker.profile_num_available_blocks: total = the device's total_memory, taken =
  // torch.cuda.max_memory_allocated() after reset_peak_memory_stats(): torch alone.
  // Dummy prompts padded to the longest; LlamaMLP keeps gate_up through down_proj; the
  // sampler's top-p/top-k in fp16 sorts twice (the argsort of the indices: values,
  // indices, reverse indices and cub's double buffers, 40 B an element, beside four fp16
  // [S, V] tensors, the int64 indices and two masks): 4 b + 50 bytes an element.
  VllmAccounting a = starting({}, "0.1.0", "0.1-0.2.4");
  a.pads_prompts   = true;
  a.keeps_gate_up  = true;
  a.sampler_fixed  = 50;
  a.sampler_per_b  = 4;
  a.batch          = VllmBatchRule::v0_whole_prompts;
  r.push_back(a);
  // Pull request 2031: taken = total - free after the profile run (no empty_cache): the
  // CUDA context, NCCL's buffers and torch's reserved segments count. Torch 2.1's
  // ProcessGroupNCCL records each all-reduced tensor on its stream, so with the host far
  // ahead of the GPU every one stays reserved (pull request 2151 found it).
  a                        = starting(r.back(), "0.2.5", "0.2.5");
  a.counts_context         = true;
  a.counts_comms           = true;
  a.pins_all_reduce_inputs = true;
  r.push_back(a);
  // 2151: TORCH_NCCL_AVOID_RECORD_STREAMS=1; 1889: one sort and a scatter (3 b + 24).
  a                        = starting(r.back(), "0.2.6", "0.2.6");
  a.pins_all_reduce_inputs = false;
  a.sampler_fixed          = 24;
  a.sampler_per_b          = 3;
  r.push_back(a);
  // _init_cache refuses a max_model_len the KV cannot hold.
  a                  = starting(r.back(), "0.2.7", "0.2.7-0.3.0");
  a.refuses_short_kv = true;
  r.push_back(a);
  // Pull request 2863: taken = the free memory read at init (after the CUDA context,
  // before NCCL and the weights) - free now.
  a                = starting(r.back(), "0.3.1", "0.3.1-0.3.3");
  a.counts_context = false;
  r.push_back(a);
  // Prompts flattened, not padded.
  a              = starting(r.back(), "0.4.0", "0.4.0-0.5.x");
  a.pads_prompts = false;
  r.push_back(a);
  // Chunked prefill on by default above 32K tokens (512 a step); LlamaMLP drops gate_up
  // before down_proj; the sampler casts the logits to fp32 and sorts them with their
  // int64 iota (b + 4 + 8 + 12 + 12 bytes an element during the sort).
  a               = starting(r.back(), "0.6.0", "0.6.0-0.6.3");
  a.keeps_gate_up = false;
  a.sampler_fixed = 36;
  a.sampler_per_b = 1;
  a.batch         = VllmBatchRule::v0_long_context_512;
  r.push_back(a);
  // Pull request 9352: taken = torch's allocated peak (weights included) + what the GPU
  // holds outside torch after empty_cache (the context among it).
  a                = starting(r.back(), "0.6.4", "0.6.4");
  a.counts_context = true;
  r.push_back(a);
  // Pull request 10511: outside torch counted from the start-up baseline (the context
  // not); 10544: 2048 tokens a step with chunked prefill.
  a                = starting(r.back(), "0.6.5", "0.6.5-0.7.x");
  a.counts_context = false;
  a.batch          = VllmBatchRule::v0_long_context_2048;
  r.push_back(a);
  // The V1 engine: Worker.determine_available_memory with the absolute formula of 0.6.4;
  // torch's communicator made lazily by the profile's logits all-gather counted too.
  a                  = starting(r.back(), "0.8.0", "0.8.x");
  a.v1               = true;
  a.counts_context   = true;
  a.counts_lazy_comm = true;
  a.batch            = VllmBatchRule::v1;
  r.push_back(a);
  // Pull request 17885: an A100 gets the small GPUs' batch defaults.
  a            = starting(r.back(), "0.9.0", "0.9.0");
  a.a100_small = true;
  r.push_back(a);
  // MemorySnapshot at init (after the context, before NCCL): the context not counted.
  a                = starting(r.back(), "0.9.1", "0.9.1-0.10.x");
  a.counts_context = false;
  r.push_back(a);
  // Pull request 25359: the distributed init moved before the snapshot: pynccl's and the
  // custom all-reduce's buffers not counted.
  a              = starting(r.back(), "0.11.0", "0.11.x");
  a.counts_comms = false;
  r.push_back(a);
  return r;
}

} // namespace

const char* VllmAccounting::newest() { return "0.11.0"; }

std::string VllmAccounting::releases() { return "0.1.0 to 0.11.2"; }

std::optional<VllmAccounting> VllmAccounting::of(const std::string& text, std::string& why)
{
  std::optional<ReleaseNumber> v = ReleaseNumber::parse(text);
  if (!v) {
    why = "expected a vLLM release number such as 0.2.4, 0.6.4 or 0.11.0";
    return std::nullopt;
  }
  static const std::vector<VllmAccounting> table = rules();
  const ReleaseNumber after{0, 11, 3}; // 0.11.2 is the last release of the newest line modelled
  if (v->from(after) || !v->from(table.front().release)) {
    why = v->str() + " is not modelled: the accounting of vLLM " + releases() + " is";
    return std::nullopt;
  }
  VllmAccounting a = table.front();
  for (const VllmAccounting& r : table)
    if (v->from(r.release))
      a = r;
  a.release = *v;
  return a;
}

} // namespace memwall

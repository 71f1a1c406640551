// The ops of one serving iteration (see ServingDriver.hpp).
#include "workloads/inference/ServingDriver.hpp"

#include "workloads/inference/engine/InferenceEngine.hpp"

namespace memwall {
namespace {

Tensor bytes_of(const DeviceRef& pool, MemCategory c, double bytes) { return Tensor{0, pool, c, bytes}; }

} // namespace

void ServingDriver::emit_kv_changes(const Iteration& it)
{
  // The pool's slots and swaps spread evenly over the attention data-parallel groups:
  // the representative GPU holds a group's share.
  double per_token = kernels_.kv_bytes_per_token() / static_cast<double>(cfg_.attention_dp());
  double off       = cfg_.kv_off.total();
  std::vector<OpId> after;
  // Swap-outs copy the victims' KV to host memory before their slots are reused.
  for (int s : it.swapped_out) {
    double bytes = static_cast<double>(kv_->held(st_.seqs[s].computed)) * per_token * (1 - off);
    dag_.alloc(gpu_, StreamKind::d2h, host_, MemCategory::kv_cache, bytes * ranks_on_socket_, "kv.swap_space");
    after.push_back(dag_.add(copy_op(gpu_, StreamKind::d2h, gpu_, host_, bytes, "kv.swap_out")));
  }
  int64_t now_slots = kv_->reserved();
  double delta      = static_cast<double>(now_slots - kv_slots_) * per_token;
  if (delta != 0) {
    auto change = [&](const DeviceRef& pool, double bytes, const char* name) {
      if (bytes > 0)
        dag_.alloc(gpu_, StreamKind::compute, pool, MemCategory::kv_cache, bytes, name,
                   {after.empty() ? OpDag::none : after.back()});
      else if (bytes < 0)
        dag_.free(bytes_of(pool, MemCategory::kv_cache, -bytes), gpu_, StreamKind::compute, name,
                  {after.empty() ? OpDag::none : after.back()});
    };
    if (cfg_.managed_kv)
      resize_managed_kv(kv_gpu_bytes_ + delta * (1 - off), after.empty() ? OpDag::none : after.back());
    else
      change(gpu_, delta * (1 - off), delta > 0 ? "kv.alloc" : "kv.free");
    for (OffloadPlace tier : {OffloadPlace::cpu, OffloadPlace::nvme})
      if (cfg_.kv_off.of(tier) > 0)
        change(offload_pool(tier), delta * cfg_.kv_off.of(tier) * ranks_sharing(tier),
               delta > 0 ? "kv.alloc_offloaded" : "kv.free_offloaded");
    after.push_back(dag_.last_alloc_or_free());
  }
  kv_slots_ = now_slots;
  for (int s : it.swapped_in) {
    double bytes = static_cast<double>(kv_->held(st_.seqs[s].computed)) * per_token * (1 - off);
    OpId copy    = dag_.add(copy_op(gpu_, StreamKind::h2d, host_, gpu_, bytes, "kv.swap_in"),
                            {after.empty() ? OpDag::none : after.back()});
    after.push_back(dag_.free(bytes_of(host_, MemCategory::kv_cache, bytes * ranks_on_socket_), gpu_, StreamKind::h2d,
                              "kv.swap_space", {copy}));
  }
  kv_ready_ = after.empty() ? OpDag::none : after.back();
}

OpId ServingDriver::emit_kernel(const KernelCost& k, OpName name, std::initializer_list<OpId> deps)
{
  double model  = k.kclass == KernelClass::elementwise ? 0.0 : k.flops;
  Op op         = kernel_op(gpu_, k.kclass, k.dtype, k.flops, k.bytes, model, name);
  op.shape      = k.shape;
  op.family     = k.family;
  op.host_paced = k.host_paced;
  return dag_.add(std::move(op), deps);
}

// Streams the offloaded parts of `bytes` into a GPU staging buffer: the host part host ->
// GPU on the h2d stream; the NVMe part NVMe -> host on the disk-reader stream, then host
// -> GPU after it. Returns the op to wait on.
OpId ServingDriver::emit_fetch(const OffShares& from, double bytes, const std::string& name, OpId after, Tensor& staged,
                               MemCategory category)
{
  staged     = dag_.alloc(gpu_, StreamKind::h2d, gpu_, category, bytes * from.total(), name + ".staging", {after});
  OpId ready = dag_.last_alloc_or_free();
  OpId last  = ready;
  if (from.cpu > 0)
    last =
        dag_.add(host_copy_op(gpu_, StreamKind::h2d, host_, gpu_, bytes * from.cpu, name + ".h2d", cfg_.offload_pinned),
                 {ready});
  if (from.nvme > 0) {
    OpId read = dag_.add(copy_op(gpu_, StreamKind::host, nvme_, host_, bytes * from.nvme, name + ".read"), {ready});
    last      = dag_.add(host_copy_op(gpu_, StreamKind::h2d, host_, gpu_, bytes * from.nvme,
                                      name + (from.cpu > 0 ? ".nvme.h2d" : ".h2d"), cfg_.offload_pinned),
                         {read});
  }
  return last;
}

namespace {

// A staging buffer's fetch waits for the buffer freed two fetches earlier: two buffers
// per stream of offloaded data, so a fetch overlaps the compute in between.
OpId two_back(const std::vector<OpId>& freed) { return freed.size() >= 2 ? freed[freed.size() - 2] : OpDag::none; }

// Splits the iteration's sequences into `parts` GPU batches of consecutive sequences,
// sizes as even as the count allows; no part is empty.
std::vector<std::vector<SeqWork>> split_batch(const std::vector<SeqWork>& batch, int64_t parts)
{
  size_t n = std::min<size_t>(static_cast<size_t>(std::max<int64_t>(parts, 1)), std::max<size_t>(batch.size(), 1));
  std::vector<std::vector<SeqWork>> out(n);
  for (size_t i = 0; i < batch.size(); ++i)
    out[i * n / batch.size()].push_back(batch[i]);
  return out;
}

} // namespace

// The hidden states leaving a layer, where FlexGen keeps them between layers: the
// offloaded part goes down after the layer and comes back before the next one.
OpId ServingDriver::emit_activation_offload(double bytes, const std::string& name)
{
  const OffShares& a = cfg_.act_off;
  if (!a.any() || bytes <= 0)
    return OpDag::none;
  OpId down = dag_.add(
      host_copy_op(gpu_, StreamKind::d2h, gpu_, host_, bytes * a.total(), name + ".act.d2h", cfg_.offload_pinned),
      {dag_.stream_tail(gpu_, StreamKind::compute)});
  OpId back = down;
  if (a.nvme > 0) {
    OpId write = dag_.add(copy_op(gpu_, StreamKind::d2h, host_, nvme_, bytes * a.nvme, name + ".act.write"), {down});
    back       = dag_.add(copy_op(gpu_, StreamKind::host, nvme_, host_, bytes * a.nvme, name + ".act.read"), {write});
  }
  return dag_.add(
      host_copy_op(gpu_, StreamKind::h2d, host_, gpu_, bytes * a.total(), name + ".act.h2d", cfg_.offload_pinned),
      {back});
}

// FlexGen's cpu_cache_compute: the `share` of attention over cached keys whose KV lives
// off the GPU runs on the CPU, at the roofline of the socket's FLOP/s and DRAM bandwidth.
// The queries go down after the qkv kernel and the outputs come back up. The CPU moves
// the KV as FlexGen's mha_gen does (pytorch_backend.py): the cached fp16 K and V permuted
// into contiguous copies (read 2 B, write 2 B an element), widened with .float() (read 2,
// write 4) and read by the two bmm's (4): 14 B per 2-B element, 7 times the KV's bytes.
// Grouped-query KV is expanded for the bmm's as Hugging Face's repeat_kv does: the fp32
// copy written and read once more per query head group. KV on
// NVMe is first read into a host workspace (FlexGen's load_cache, path 1: disk to the
// CPU's attention_compute_workspace), on the disk-reader stream ahead of the kernel; two
// workspaces, so the next GPU batch's read overlaps this one's attention.
OpId ServingDriver::emit_cpu_attention(const LayerKernels& k, double share, const std::string& name,
                                       std::vector<OpId>& freed_kv)
{
  double io  = k.cached_queries * kernels_.query_width() * kernels_.activation_element_bytes();
  OpId down  = dag_.add(host_copy_op(gpu_, StreamKind::d2h, gpu_, host_, io, name + ".q.d2h", cfg_.offload_pinned),
                        {dag_.stream_tail(gpu_, StreamKind::compute)});
  double rep = kernels_.query_width() / kernels_.kv_width();
  double kv  = k.cached_kv_bytes * share;
  double from_disk = k.cached_kv_bytes * cfg_.kv_off.nvme;
  Tensor workspace;
  OpId read = OpDag::none;
  if (from_disk > 0) {
    workspace = dag_.alloc(gpu_, StreamKind::host, host_, MemCategory::workspace, from_disk * ranks_on_socket_,
                           name + ".kv.workspace", {two_back(freed_kv)});
    read      = dag_.add(copy_op(gpu_, StreamKind::host, nvme_, host_, from_disk, name + ".kv.read"),
                         {dag_.last_alloc_or_free()});
  }
  Op attn;
  attn.kind   = OpKind::host_compute;
  attn.stream = StreamKind::host;
  attn.device = host_;
  attn.src    = gpu_; // the rank it works for: tp peers on the socket run theirs beside it
  attn.name   = name + ".cpu";
  attn.dtype  = Dtype::fp32;
  attn.flops  = 4 * k.cached_pairs * kernels_.query_width() * share;
  attn.bytes  = kv * (5 + 2 * rep) + (rep > 1 ? kv * 2 * rep : 0.0); // permute 2, widen 3, bmm reads 2 rep
  OpId done   = dag_.add(std::move(attn), {down, read});
  if (from_disk > 0) // freed by the CPU once its attention is done
    freed_kv.push_back(dag_.free(workspace, host_, StreamKind::host, name + ".kv.workspace", {done}));
  return dag_.add(host_copy_op(gpu_, StreamKind::h2d, host_, gpu_, io, name + ".out.h2d", cfg_.offload_pinned), {done});
}

void ServingDriver::emit_iteration(const Iteration& it)
{
  std::vector<SeqWork> batch;
  for (const Work& w : it.work) {
    const Sequence& q = st_.seqs[w.seq];
    // Padding rows of a static batch attend over their context but sample nothing.
    batch.push_back({w.tokens, q.computed, !w.padding && q.computed + w.tokens >= q.tokens()});
  }
  IterationKernels k = kernels_.plan(batch);
  // One GPU batch's workspace at a time, beside the other batches' residual streams.
  std::vector<IterationKernels> parts;
  double act_bytes                        = 0;
  std::vector<std::vector<SeqWork>> split = split_batch(batch, cfg_.gpu_batches);
  for (const auto& part : split) {
    parts.push_back(split.size() == 1 ? k : kernels_.plan(part)); // one batch: the plan above
    act_bytes = std::max(act_bytes,
                         parts.back().activation_bytes + kernels_.gpu_residual_bytes(k.tokens - parts.back().tokens));
  }
  // "it7123.embed": the iteration's number, not interned (OpName), so that a long serving
  // loop adds no names.
  auto tag = [&](const std::string& what) { return OpName("it", static_cast<uint64_t>(stats_.iterations), what); };
  act_     = dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::activations, act_bytes, tag(".activations"),
                        {kv_ready_});
  // Offloaded hidden states between layers, in host memory or on NVMe for every rank there.
  std::vector<Tensor> act_off;
  for (OffloadPlace tier : {OffloadPlace::cpu, OffloadPlace::nvme})
    if (cfg_.act_off.of(tier) > 0)
      act_off.push_back(dag_.alloc(gpu_, StreamKind::compute, offload_pool(tier), MemCategory::activations,
                                   kernels_.residual_bytes(k.tokens) * cfg_.act_off.of(tier) * ranks_sharing(tier),
                                   tag(".offloaded_activations")));
  // Weights fetched as their turn comes (Accelerate's and ZeRO-3's hooks): a staging
  // buffer and a copy on the compute stream, which the kernels after it wait for.
  const WeightStreaming streaming = kernels_.engine().weight_streaming(cfg_);
  auto fetch_now                  = [&](double bytes, const std::string& name) {
    Tensor staged = dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::weights, bytes, name + ".staging");
    dag_.add(host_copy_op(gpu_, StreamKind::compute, host_, gpu_, bytes, name + ".h2d", streaming.pinned));
    return staged;
  };
  // ZeRO-3 offloads the embedding table too: fetched for the embedding and again for
  // the head it is tied to (each table once where they are two).
  const double table_fetch = offloaded_tables() / (model_.tied_embeddings ? 1.0 : 2.0);
  auto edge                = [&](const std::string& name, auto&& emit) {
    if (table_fetch <= 0)
      return emit();
    Tensor staged = fetch_now(table_fetch, tag("." + name + ".weights"));
    emit();
    dag_.free(staged, gpu_, StreamKind::compute, tag("." + name + ".weights.staging"));
  };
  edge("embed", [&] {
    if (k.eager_embed.empty())
      touch_edge(emit_kernel(k.embed, tag(".embed")), k.embed, false);
    for (const KernelCost& e : k.eager_embed)
      emit_kernel(e, tag("." + e.name));
  });

  double w_off = cfg_.weights_off.total();
  std::vector<OpId> freed_w, freed_kv; // staging buffers as they are freed
  OpId act_back = OpDag::none;         // the previous layer's offloaded hidden states, back
  // Offloaded weights are fetched one layer ahead, as FlexGen's load_weight(i, j + 1) is
  // issued before layer j computes: the next layer's copy is queued on the copy streams
  // ahead of this layer's attention outputs and hidden states, so it overlaps the compute.
  // Two staging buffers: layer l + 1's fetch waits for layer l - 1's to be freed.
  OpId next_ready = OpDag::none;
  Tensor next_stage;
  auto fetch_weights = [&](int64_t l) {
    if (w_off > 0 && l < model_.layers && streaming.ahead)
      next_ready = emit_fetch(cfg_.weights_off, kernels_.layer_weight_bytes(), "L" + std::to_string(l) + ".weights",
                              freed_w.empty() ? OpDag::none : freed_w.back(), next_stage, MemCategory::weights);
  };
  fetch_weights(0);
  for (int64_t l = 0; l < model_.layers; ++l) {
    std::string L  = "L" + std::to_string(l);
    OpId w_ready   = next_ready;
    Tensor w_stage = next_stage;
    fetch_weights(l + 1);
    if (w_off > 0 && !streaming.ahead)
      w_stage = fetch_now(kernels_.layer_weight_bytes() * w_off, L + ".weights");
    OpId mark                            = static_cast<OpId>(dag_.size());
    const std::vector<KernelCost>* eager = k.eager_layer(l);
    for (size_t e = 0; eager && e < eager->size(); ++e) // an eager engine's kernels, one by one
      emit_kernel((*eager)[e], L + "." + (*eager)[e].name);
    for (size_t p = 0; p < parts.size() && !eager; ++p)
      emit_layer_part(parts[p], l, parts.size() > 1 ? L + ".b" + std::to_string(p) : L, w_ready, freed_kv);
    // The layer's first kernel also waits for its offloaded input hidden states.
    for (OpId v = mark; act_back != OpDag::none && v < dag_.size(); ++v)
      if (dag_.op(v).kind == OpKind::kernel && dag_.op(v).stream == StreamKind::compute) {
        dag_.depend(v, act_back);
        break;
      }
    if (l + 1 < model_.layers) // the last layer's output goes straight to the head
      act_back = emit_activation_offload(kernels_.residual_bytes(k.tokens), L);
    if (w_off > 0)
      freed_w.push_back(dag_.free(w_stage, gpu_, StreamKind::compute, L + ".weights.staging"));
  }
  edge("head", [&] {
    if (k.eager_head.empty())
      touch_edge(emit_kernel(k.head, tag(".head")), k.head, true);
    for (const KernelCost& e : k.eager_head)
      emit_kernel(e, tag("." + e.name));
  });
  if (tp_group_ >= 0 && k.logits_gather_bytes > 0)
    dag_.add(collective_op(gpu_, StreamKind::compute, CollectiveKind::all_gather, tp_group_, k.logits_gather_bytes,
                           tag(".logits")));
  dag_.free(act_, gpu_, StreamKind::compute, tag(".activations"));
  for (const Tensor& t : act_off)
    dag_.free(t, gpu_, StreamKind::compute, tag(".offloaded_activations"));
}

// One layer for one GPU batch: qkv, attention (with its offloaded KV fetched, or run on
// the CPU), the new tokens' KV stored, then proj and the MLP.
void ServingDriver::emit_layer_part(const IterationKernels& k, int64_t layer, const std::string& L, OpId w_ready,
                                    std::vector<OpId>& freed_kv)
{
  double kv_off = cfg_.kv_off.total();
  double kv_new = static_cast<double>(k.tokens) * kernels_.kv_bytes_per_token() / static_cast<double>(model_.layers);
  // With CPU attention the GPU keeps the attention of prefills over their own tokens and
  // of the cached keys still on the GPU; the CPU's share comes back before the output GEMM.
  const bool cpu_attention = cfg_.cpu_attention && kv_off > 0 && k.layer.cached_queries > 0; // not for fresh prefills
  KernelCost gpu_attn      = k.layer.attn;
  if (cpu_attention) {
    gpu_attn.flops -= 4 * k.layer.cached_pairs * kernels_.query_width() * kv_off;
    gpu_attn.bytes -= k.layer.cached_kv_bytes * kv_off;
  }
  OpId kv_in = OpDag::none;
  Tensor kv_stage;
  // Only cached KV is fetched: the new tokens' K and V were just computed on the GPU.
  const bool fetch = kv_off > 0 && !cpu_attention && k.layer.cached_kv_bytes > 0;
  if (fetch)
    kv_in = emit_fetch(cfg_.kv_off, k.layer.cached_kv_bytes, L + ".kv", two_back(freed_kv), kv_stage,
                       MemCategory::workspace);
  touch_layer(emit_kernel(k.layer.qkv, L + ".qkv", {w_ready}), k.layer, layer, k.layer.qkv, 0);
  OpId cpu_out = cpu_attention ? emit_cpu_attention(k.layer, kv_off, L + ".attn", freed_kv) : OpDag::none;
  OpId attn    = emit_kernel(cpu_attention ? gpu_attn : k.layer.attn, L + ".attn", {kv_in});
  touch_layer(attn, k.layer, layer, cpu_attention ? gpu_attn : k.layer.attn, 1);
  if (kv_off > 0) {
    if (fetch)
      freed_kv.push_back(dag_.free(kv_stage, gpu_, StreamKind::compute, L + ".kv.staging"));
    dag_.add(host_copy_op(gpu_, StreamKind::d2h, gpu_, host_, kv_new * kv_off, L + ".kv.d2h", cfg_.offload_pinned),
             {attn});
    if (cfg_.kv_off.nvme > 0)
      dag_.add(copy_op(gpu_, StreamKind::d2h, host_, nvme_, kv_new * cfg_.kv_off.nvme, L + ".kv.write"));
  }
  // Attention data parallelism: an MoE layer's tokens go to their experts' GPUs and back
  // by all-to-all, and the tp group all-gathers what its ranks got back.
  const bool all_to_all = ep_group_ >= 0 && model_.moe_layer(layer);
  if (!all_to_all && tp_group_ < 0) {
    KernelCost out = k.layer.mlp; // proj, norm and MLP back to back: one launch
    out.flops += k.layer.proj.flops;
    out.bytes += k.layer.proj.bytes;
    touch_layer(emit_kernel(out, L + ".out", {cpu_out}), k.layer, layer, out, 4);
    return;
  }
  auto collective = [&](CollectiveKind kind, int32_t group, double bytes, const char* what) {
    if (group >= 0)
      dag_.add(collective_op(gpu_, StreamKind::compute, kind, group, bytes, L + what));
  };
  touch_layer(emit_kernel(k.layer.proj, L + ".proj", {cpu_out}), k.layer, layer, k.layer.proj, 2);
  collective(CollectiveKind::all_reduce, tp_group_, k.layer.allreduce_bytes, ".attn.allreduce");
  if (all_to_all)
    collective(CollectiveKind::all_to_all, ep_group_, k.layer.dispatch_bytes, ".moe.dispatch");
  touch_layer(emit_kernel(k.layer.mlp, L + ".mlp"), k.layer, layer, k.layer.mlp, 3);
  if (all_to_all) {
    collective(CollectiveKind::all_to_all, ep_group_, k.layer.combine_bytes, ".moe.combine");
    collective(CollectiveKind::all_gather, tp_group_, k.layer.moe_gather_bytes, ".moe.gather");
  } else {
    collective(CollectiveKind::all_reduce, tp_group_, k.layer.allreduce_bytes, ".mlp.allreduce");
  }
}

} // namespace memwall

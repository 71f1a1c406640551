#include "workloads/inference/ServingDriver.hpp"

#include "workloads/inference/engine/InferenceEngine.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {

ServingDriver::ServingDriver(const ModelSpec& model, const InferenceConfig& cfg, const ClusterSpec& cluster)
    : model_(model), cfg_(cfg), cluster_(cluster), kernels_(model, cfg)
{
  const NodeSpec& node = cluster_.node;
  gpu_                 = DeviceRef{DeviceKind::gpu, 0, 0};
  host_                = DeviceRef{DeviceKind::host, 0, node.socket_of_gpu(0)};
  nvme_                = DeviceRef{DeviceKind::nvme, 0, 0};
  // The replica's ranks in Megatron order (the first tp are the representative's group);
  // those on the representative's node (its shadows) share its NVMe, those on its socket
  // also its DRAM.
  for (int64_t r = 0; r < cfg_.replica_gpus(); ++r) {
    DeviceRef d{DeviceKind::gpu, static_cast<int32_t>(r / cluster_.gpus_per_node),
                static_cast<int32_t>(r % cluster_.gpus_per_node)};
    if (r < cfg_.tp)
      tp_members_.push_back(d);
    else if (cfg_.tp > 1) { // the other attention data-parallel groups' tp ranks
      size_t g = static_cast<size_t>(r / cfg_.tp) - 1;
      other_tp_groups_.resize(std::max(other_tp_groups_.size(), g + 1));
      other_tp_groups_[g].push_back(d);
    }
    ep_members_.push_back(d);
    if (r > 0 && d.node == 0) {
      node_peers_.push_back(d);
      if (node.socket_of_gpu(d.index) == host_.index)
        ++ranks_on_socket_;
    }
  }
  for (const Request& r : cfg_.requests) {
    Sequence s;
    s.req = r;
    st_.seqs.push_back(s);
  }
  // Attention data-parallel groups are scheduled as one pool of d times each group's
  // limits and KV, the sequences spread evenly over them (vLLM's DP load balancer); a
  // sequence still lives on one group, so it must fit in one group's KV.
  const int64_t groups              = cfg_.attention_dp();
  const BatchLimits& batch          = cfg_.scheduler->limits();
  st_.limits.max_num_seqs           = batch.max_num_seqs * groups;
  st_.limits.max_num_batched_tokens = batch.max_num_batched_tokens * groups;
  st_.limits.chunked_prefill        = batch.chunked_prefill;
  st_.limits.swap                   = cfg_.kv_manager->swaps();
  st_.limits.swap_tokens =
      static_cast<int64_t>(cfg_.kv_manager->swap_space_bytes() / std::max(kernels_.kv_bytes_per_token(), 1.0)) * groups;

  KvManagerParams p;
  double per_token            = kernels_.kv_bytes_per_token();
  double gpu_per_token        = per_token * (1.0 - cfg_.kv_off.total());
  const StartupBudget startup = kv_budget();
  double budget               = startup.kv_bytes;
  double tokens               = gpu_per_token > 0 ? std::max(budget, 0.0) / gpu_per_token : 1e18;
  // Each tier holding part of the KV bounds the tokens too, after its part of the weights.
  for (OffloadPlace tier : {OffloadPlace::cpu, OffloadPlace::nvme}) {
    double share = cfg_.kv_off.of(tier);
    if (share <= 0)
      continue;
    double room = tier == OffloadPlace::nvme ? node.nvme_bytes
                                             : node.dram_bytes / node.sockets - cfg_.kv_manager->swap_space_bytes();
    int sharing = ranks_sharing(tier);
    room -= kernels_.layer_weight_bytes() * static_cast<double>(model_.layers) * cfg_.weights_off.of(tier) * sharing;
    tokens = std::min(tokens, std::max(room, 0.0) / (per_token * share * sharing));
  }
  p.capacity_tokens = static_cast<int64_t>(std::floor(std::min(tokens, 1e15)));
  p.groups          = groups;
  if (!model_.mla.enabled()) { // every layer's KV is as wide: the windowed layers' share is their count's
    p.windowed_share = static_cast<double>(model_.windowed_layers()) / static_cast<double>(model_.layers);
    p.window         = model_.sliding_window;
  }
  p.max_model_len = cfg_.max_model_len;
  kv_             = cfg_.kv_manager->start(p);

  stats_.present            = true;
  stats_.kv_capacity_tokens = kv_->capacity();
  stats_.kv_bytes_per_token = per_token;
  // What the engine leaves may be less than nothing (weights and activations over the
  // memory it may use): the budget is then none, and the shortfall says by how much.
  stats_.kv_budget_bytes = std::max(budget, 0.0);
  stats_.kv_accounting   = startup.how;
  int64_t smallest       = kv_->slots_for(1);
  if (kv_->sequence_capacity() < smallest) {
    stats_.kv_no_room         = true;
    stats_.kv_shortfall_bytes = std::max(static_cast<double>(smallest) * gpu_per_token - budget, 0.0);
  }
  // The engine's own start-up checks (vLLM refuses a max_model_len its KV cannot hold), on
  // one worker's cache (an attention data-parallel group's); KV kept off the GPU is
  // FlexGen's placement, which has none.
  if (!cfg_.kv_off.any()) {
    const int64_t block = kv_->reserves_whole_context() ? 1 : smallest;
    std::string refusal =
        kernels_.engine().refuses_start(startup, kv_->sequence_capacity(), block, cfg_.max_model_len, per_token);
    if (!refusal.empty()) {
      stats_.kv_no_room = true;
      stats_.kv_refusal = refusal;
      // What it lacks to hold one request of max_model_len (a block at least).
      double needed             = static_cast<double>(std::max(smallest, cfg_.max_model_len)) * gpu_per_token;
      stats_.kv_shortfall_bytes = std::max(stats_.kv_shortfall_bytes, needed - budget);
    }
  }
  if (cfg_.kv_off.any()) {
    stats_.kv_offloaded_fraction = cfg_.kv_off.total();
    stats_.kv_offload_place      = cfg_.kv_off.cpu > 0 && cfg_.kv_off.nvme > 0 ? "cpu+nvme"
                                   : cfg_.kv_off.nvme > 0                      ? "nvme"
                                                                               : "cpu";
  }
}

ServingDriver::~ServingDriver() = default;

// What the engine leaves for the KV cache (vLLM: gpu_memory_utilization of the memory
// less what its start-up's profile run found taken) beside the GPU-resident weights and
// the staging buffers of offloaded layers.
StartupBudget ServingDriver::kv_budget() const
{
  const GpuSpec& g         = cluster_.node.gpu;
  double layers            = static_cast<double>(model_.layers);
  double w_off             = cfg_.weights_off.total();
  const BatchLimits& batch = cfg_.scheduler->limits();
  StartupInputs in;
  in.total       = g.memory_bytes;
  in.utilization = cfg_.gpu_memory_utilization;
  in.weights     = kernels_.weight_bytes() - layers * kernels_.layer_weight_bytes() * w_off - offloaded_tables() +
               2 * kernels_.layer_weight_bytes() * w_off; // staging: two layers' offloaded part
  in.context                = g.context_bytes;
  in.offloaded              = cfg_.weights_off.any() || cfg_.kv_off.any() || cfg_.act_off.any() || cfg_.gpu_batches > 1;
  int64_t seqs              = std::min<int64_t>(batch.max_num_seqs, static_cast<int64_t>(st_.seqs.size()));
  int64_t tokens            = cfg_.scheduler->largest_iteration_tokens(st_, seqs, batch.max_num_batched_tokens);
  in.iteration_peak         = kernels_.activation_bytes(tokens, seqs, cfg_.max_model_len, cfg_.gpu_batches);
  in.max_num_batched_tokens = batch.max_num_batched_tokens;
  in.max_num_seqs           = batch.max_num_seqs;
  in.tp                     = cfg_.tp;
  in.layers                 = model_.layers;
  in.hidden                 = static_cast<double>(model_.hidden);
  in.inner                  = kernels_.mlp_inner_width();
  in.vocab                  = static_cast<double>(model_.vocab);
  in.mlp_intermediates      = model_.mlp == MlpKind::swiglu ? 3 : 2;
  in.act_bytes              = kernels_.activation_element_bytes();
  if (!model_.learned_positions && !model_.mla.enabled()) // vLLM's rotary cos/sin cache, [positions, head_dim]
    in.rope_cache = static_cast<double>(model_.max_seq_len * model_.head_dim()) * in.act_bytes;
  in.compute_capability = g.compute_capability;
  if (cfg_.managed_weights)
    in.weights = 0;
  if (cfg_.managed_activations)
    in.iteration_peak = 0;
  return kernels_.engine().kv_budget(in);
}

// The embedding and head tables where the engine offloads them with the layers (ZeRO-3
// offloads every parameter): in host memory, staged on the GPU as they are used.
double ServingDriver::offloaded_tables() const
{
  if (!cfg_.weights_off.any() || !kernels_.engine().weight_streaming(cfg_).tables)
    return 0.0;
  return kernels_.weight_bytes() - static_cast<double>(model_.layers) * kernels_.layer_weight_bytes();
}

void ServingDriver::setup()
{
  dag_.track_accesses(cfg_.record_tensor_accesses);
  dag_.set_represents(gpu_, static_cast<int>(cfg_.replica_gpus()));
  dag_.set_shadows(gpu_, node_peers_);
  if (cfg_.tp > 1)
    tp_group_ = dag_.add_group(tp_members_, other_tp_groups_); // the other groups' all-reduces run beside
  if (cfg_.attention_dp() > 1)
    ep_group_ = dag_.add_group(ep_members_);
  const GpuSpec& g = cluster_.node.gpu;
  if (g.context_bytes > 0)
    dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::context, g.context_bytes, "cuda_context");
  double layer_w = kernels_.layer_weight_bytes() * static_cast<double>(model_.layers);
  double w_off   = cfg_.weights_off.total();
  weights_       = dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::weights,
                              kernels_.weight_bytes() - layer_w * w_off - offloaded_tables(), "weights");
  for (OffloadPlace tier : {OffloadPlace::cpu, OffloadPlace::nvme}) // every rank's share sits in the same DRAM / NVMe
    if (cfg_.weights_off.of(tier) > 0)
      dag_.alloc(gpu_, StreamKind::compute, offload_pool(tier), MemCategory::weights,
                 (layer_w * cfg_.weights_off.of(tier) + (tier == OffloadPlace::cpu ? offloaded_tables() : 0.0)) *
                     ranks_sharing(tier),
                 "offloaded_weights");
  dag_.set_phase(StepPhase::serving); // every later op belongs to an iteration
}

void ServingDriver::account_iteration(double now)
{
  for (const Work& w : current_.work) {
    if (w.padding)
      continue;
    Sequence& q = st_.seqs[w.seq];
    q.computed += w.tokens;
    if (q.computed < q.tokens())
      continue; // a prefill chunk: nothing sampled yet
    ++q.generated;
    if (q.generated == 1)
      q.first_token_s = now;
    else
      q.max_itl_s = std::max(q.max_itl_s, now - q.last_token_s);
    q.last_token_s = now;
    if (q.generated >= q.req.output_tokens)
      q.done = true;
  }
  double per_token = kernels_.kv_bytes_per_token();
  KvSample k;
  k.time           = now;
  double groups    = static_cast<double>(cfg_.attention_dp()); // per GPU: its group's even share
  k.used_bytes     = static_cast<double>(kv_->stored_tokens(st_)) * per_token / groups;
  k.reserved_bytes = static_cast<double>(kv_->reserved()) * per_token / groups;
  k.running        = static_cast<int64_t>(st_.running.size());
  k.waiting        = st_.queued(now);
  stats_.kv.push_back(k);
  current_ = Iteration{};
}

void ServingDriver::retire(double now)
{
  for (int s : cfg_.scheduler->retire(st_, *kv_))
    st_.seqs[s].finish_s = now;
}

SourceDecision ServingDriver::next(double now)
{
  // Everything issued so far has run: keep its model FLOPs, drop its ops.
  model_flops_ += dag_.model_flops();
  dag_.forget_ops();
  if (!started_) {
    setup();
    started_ = true;
  } else if (!current_.empty()) {
    account_iteration(now);
  }
  retire(now);
  st_.admit_arrivals(now);
  Iteration it = cfg_.scheduler->schedule(st_, *kv_);
  emit_kv_changes(it);
  if (it.empty()) {
    if (st_.next_arrival_time() > now)
      return {SourceDecision::Kind::wait, st_.next_arrival_time()};
    if (!st_.waiting.empty() || !st_.running.empty())
      throw std::logic_error("serving: the scheduler found no work while requests wait");
    return {SourceDecision::Kind::done, now};
  }
  stats_.iterations++;
  stats_.preemptions += it.recomputed + static_cast<int64_t>(it.swapped_out.size());
  stats_.swaps += static_cast<int64_t>(it.swapped_out.size());
  stats_.max_running_seqs = std::max<int64_t>(stats_.max_running_seqs, static_cast<int64_t>(st_.running.size()));
  for (const Work& w : it.work)
    if (Sequence& q = st_.seqs[w.seq]; q.scheduled_s < 0)
      q.scheduled_s = now;
  emit_iteration(it);
  current_ = std::move(it);
  return {SourceDecision::Kind::ops, now};
}

ServingStats ServingDriver::take_stats()
{
  for (const Sequence& s : st_.seqs)
    stats_.requests.push_back({s.req.id, s.req.arrival_s, s.first_token_s, s.finish_s, s.max_itl_s, s.req.prompt_tokens,
                               s.req.output_tokens, s.preemptions, s.rejected,
                               static_cast<uint8_t>(s.rejected ? s.req.reject : RejectReason::none), s.scheduled_s});
  return std::move(stats_);
}

} // namespace memwall

#include "workloads/training/TrainingStepGenerator.hpp"

namespace memwall {

TrainingStepGenerator::TrainingStepGenerator(const ModelSpec& model, const TrainingConfig& cfg,
                                             const ClusterSpec& cluster)
    : model_(model), cfg_(cfg), stack_(cfg.stack), state_bytes_(stack_->state_bytes(cfg, model)), cluster_(cluster),
      layout_(cfg, cluster.gpus_per_node), shape_(step_shape(cfg))
{
  shape_.weight_bytes = weight_bytes_per_param();
  shape_.ep_nodes     = cfg.ep > 1 ? layout_.ep_nodes() : 1;
  // Virtual stage vs = chunk * pp + stage holds the next cfg.stage_layers()[vs] layers
  // (an even split unless first/last_stage_layers say otherwise); the embedding goes
  // with the first virtual stage, the head with the last.
  int64_t virtual_stages     = cfg.pp * cfg.virtual_stages;
  std::vector<int64_t> split = cfg.stage_layers(model.layers);
  auto add                   = [&](BlockPlan plan, int64_t vs) {
    Block b;
    b.plan  = std::move(plan);
    b.stage = static_cast<int>(vs % cfg.pp);
    b.chunk = vs / cfg.pp;
    blocks_.push_back(std::move(b));
  };
  add(stack_->embedding(model, shape_), 0);
  int64_t vs = 0, left = split.empty() ? model.layers : split[0];
  for (int64_t l = 0; l < model.layers; ++l) {
    while (left == 0 && vs + 1 < virtual_stages)
      left = split[static_cast<size_t>(++vs)];
    add(stack_->layer(model, shape_, l), vs);
    --left;
  }
  add(stack_->head(model, shape_), virtual_stages - 1);
}

double TrainingStepGenerator::weight_bytes_per_param() const { return state_bytes_.weights; }
double TrainingStepGenerator::gradient_bytes_per_param() const { return state_bytes_.gradients; }
double TrainingStepGenerator::optimizer_bytes_per_param() const { return state_bytes_.optimizer; }

double TrainingStepGenerator::shard(double params) const
{
  return cfg_.zero >= 1 ? params / static_cast<double>(cfg_.replicas()) : params;
}

std::pair<double, double> TrainingStepGenerator::dense_and_experts(int b, double full) const
{
  const BlockPlan& p = blocks_[b].plan;
  if (!cfg_.experts_folded() || p.expert_params <= 0 || p.params <= 0)
    return {full, 0.0};
  double experts = full * p.expert_params / p.params;
  return {full - experts, experts};
}

double TrainingStepGenerator::shard(int b, double full) const
{
  // Without ZeRO nothing is sharded: a rank keeps every state of the experts it holds.
  if (cfg_.zero == 0)
    return full;
  auto [dense, experts] = dense_and_experts(b, full);
  return shard(dense) + shard(experts) * cfg_.expert_shard_scale();
}

OpDag TrainingStepGenerator::generate(bool chains)
{
  dag_.track_accesses(cfg_.record_tensor_accesses);
  dag_.set_chains(chains);
  build_stages();
  emit_setup();
  plan_gathers();
  emit_pipeline();
  flush_buckets();
  dag_.set_phase(StepPhase::optimizer);
  emit_optimizer();
  return std::move(dag_);
}

void TrainingStepGenerator::build_stages()
{
  const NodeSpec& node = cluster_.node;
  for (int64_t p = 0; p < cfg_.pp; ++p) {
    Stage s;
    s.gpu                        = layout_.representative(p);
    s.host                       = DeviceRef{DeviceKind::host, s.gpu.node, node.socket_of_gpu(s.gpu.index)};
    s.nvme                       = DeviceRef{DeviceKind::nvme, s.gpu.node, 0};
    std::vector<DeviceRef> peers = layout_.node_peers(p);
    for (const auto& q : peers) {
      s.shadows_on_node++;
      if (node.socket_of_gpu(q.index) == s.host.index)
        s.shadows_on_socket++;
    }
    dag_.set_represents(s.gpu, static_cast<int>(layout_.ranks_per_stage()));
    dag_.set_shadows(s.gpu, peers);
    if (cfg_.tp > 1)
      s.tp_group = dag_.add_group(layout_.tp_group(p), layout_.peer_tp_groups(p));
    if (cfg_.replicas() > 1)
      s.dp_group = dag_.add_group(layout_.dp_group(p), layout_.peer_dp_groups(p));
    if (cfg_.ep > 1)
      s.ep_group = dag_.add_group(layout_.ep_group(p), layout_.peer_ep_groups(p));
    if (cfg_.ep > shape_.ep_nodes && shape_.ep_nodes > 1)
      s.ep_node_group = dag_.add_group(layout_.ep_node_group(p), layout_.peer_ep_node_groups(p));
    if (cfg_.etp > 1)
      s.etp_group = cfg_.etp == cfg_.tp ? s.tp_group : dag_.add_group(layout_.etp_group(p), layout_.peer_etp_groups(p));
    if (cfg_.cp > 1)
      s.cp_group = dag_.add_group(layout_.cp_group(p), layout_.peer_cp_groups(p));
    // Routed experts' gradients: among the ranks holding the same expert shard (none when
    // etp x ep spans all of them); without MoE folding, the dp group.
    s.lanes[0].group   = s.dp_group;
    s.lanes[1].group   = !cfg_.experts_folded() ? s.dp_group
                         : layout_.edp() > 1    ? dag_.add_group(layout_.edp_group(p), layout_.peer_edp_groups(p))
                                                : -1;
    s.lanes[1].experts = true;
    s.chunks.resize(static_cast<size_t>(cfg_.virtual_stages));
    stages_.push_back(std::move(s));
  }
  for (size_t b = 0; b < blocks_.size(); ++b)
    stages_[blocks_[b].stage].chunks[blocks_[b].chunk].push_back(static_cast<int>(b));
}

double TrainingStepGenerator::host_share(const Stage& s, bool nvme) const
{
  return nvme ? s.shadows_on_node : s.shadows_on_socket;
}

DeviceRef TrainingStepGenerator::state_pool(const Stage& s, OffloadTarget t) const
{
  return t == OffloadTarget::cpu ? s.host : t == OffloadTarget::nvme ? s.nvme : s.gpu;
}

void TrainingStepGenerator::emit_setup()
{
  const double ctx = cluster_.node.gpu.context_bytes;
  for (auto& s : stages_)
    if (ctx > 0)
      dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::context, ctx, "cuda_context");
  // Memory in a host or NVMe pool is shared by every rank of the node placed there: the
  // representative allocates their share too.
  auto place = [&](Stage& s, OffloadTarget where, MemCategory c, double bytes, const std::string& name) {
    DeviceRef pool = state_pool(s, where);
    if (where != OffloadTarget::none)
      bytes *= host_share(s, where == OffloadTarget::nvme);
    return dag_.alloc(s.gpu, StreamKind::compute, pool, c, bytes, name);
  };
  for (size_t index = 0; index < blocks_.size(); ++index) {
    Block& b = blocks_[index];
    Stage& s = stages_[b.stage];
    if (b.plan.frozen_params > 0)
      dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::weights,
                 b.plan.frozen_params * shape_.frozen_weight_bytes, b.plan.name + ".frozen_weights");
    if (b.plan.params <= 0)
      continue;
    double weights = b.plan.params * weight_bytes_per_param();
    if (cfg_.zero == 3) {
      // Persistent tensors (DeepSpeed's small parameters) are held whole, the rest sharded.
      double whole = persistent_params(static_cast<int>(index)) * weight_bytes_per_param();
      b.weights =
          place(s, cfg_.offload_params, MemCategory::weights,
                (weights - whole) / static_cast<double>(cfg_.replicas()) + whole, b.plan.name + ".weight_shard");
    } else
      b.weights = place(s, OffloadTarget::none, MemCategory::weights, weights, b.plan.name + ".weights");
    if (ddp_bucket_copies())
      dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::gradients, b.plan.params * gradient_bytes_per_param(),
                 b.plan.name + ".ddp_bucket");
    b.states = place(s, cfg_.offload_optimizer, MemCategory::optimizer,
                     shard(static_cast<int>(index), b.plan.params) * optimizer_bytes_per_param(),
                     b.plan.name + ".optimizer_states");
  }
}

const OpName& TrainingStepGenerator::name(int b, size_t i, Role role)
{
  Block& blk = blocks_[b];
  if (blk.names.empty())
    blk.names.resize(blk.plan.kernels.size());
  OpName& n = blk.names[i][static_cast<size_t>(role)];
  if (n == OpName()) {
    static const std::array<std::pair<const char*, const char*>, 11> parts{{{".fwd.", ""},
                                                                            {".fwd.", ".saved"},
                                                                            {".fwd.", ".tp"},
                                                                            {".recompute.", ""},
                                                                            {".recompute.", ".saved"},
                                                                            {".recompute.", ".tp"},
                                                                            {".bwd.", ""},
                                                                            {".bwd.", ".tp_in"},
                                                                            {".bwd.", ".tp"},
                                                                            {".bwd.", ".free_saved"},
                                                                            {".bwd.", ".free_regenerated"}}};
    const auto& [infix, suffix] = parts[static_cast<size_t>(role)];
    n                           = OpName(blk.plan.name + infix + blk.plan.kernels[i].name + suffix);
  }
  return n;
}

OpId TrainingStepGenerator::kernel(const DeviceRef& gpu, const OpName& name, const KernelPlan& k, bool forward,
                                   bool recompute)
{
  // Elementwise FLOPs and recomputation do not count toward MFU.
  double model = k.kclass != KernelClass::elementwise && !recompute ? (forward ? k.fwd_flops : k.bwd_model_flops) : 0.0;
  Op op    = kernel_op(gpu, k.kclass, k.dtype, forward ? k.fwd_flops : k.bwd_flops, forward ? k.fwd_bytes : k.bwd_bytes,
                       model, name);
  op.shape = k.shape;
  op.family = k.family;
  if (!forward)
    op.pass = k.bwd_pass;
  return dag_.add(std::move(op));
}

void TrainingStepGenerator::tp_collective(int b, size_t i, Role role, const TpComm& c)
{
  const Stage& s = stage_of(b);
  int32_t group  = c.group == CommGroup::ep        ? s.ep_group
                   : c.group == CommGroup::cp      ? s.cp_group
                   : c.group == CommGroup::etp     ? s.etp_group
                   : c.group == CommGroup::ep_node ? s.ep_node_group
                                                   : s.tp_group;
  if (c.bytes <= 0 || group < 0)
    return;
  // Megatron's tp collectives (and MoE all-to-alls) block the compute stream.
  dag_.add(collective_op(s.gpu, StreamKind::compute, c.kind, group, c.bytes, name(b, i, role)));
}

void TrainingStepGenerator::emit_forward(int b, int64_t mb)
{
  Block& blk     = blocks_[b];
  Stage& s       = stage_of(b);
  const auto& ks = blk.plan.kernels;
  const SavedActivations policy(cfg_.recompute);
  bool full                = policy.checkpoints(blk.plan);
  OpId params              = gathered(b);
  const std::string prefix = blk.plan.name + ".fwd.";
  auto& saved              = saved_[slot_key(b, mb)];
  saved.assign(ks.size(), Tensor{});
  if (full)
    checkpoints_[slot_key(b, mb)] = dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::activations,
                                               blk.plan.input_bytes, prefix + "checkpoint", {params});
  for (size_t i = 0; i < ks.size(); ++i) {
    const KernelPlan& k = ks[i];
    double keep         = policy.kept(blk.plan, k);
    if (keep > 0)
      saved[i] =
          dag_.alloc(s.gpu, StreamKind::compute, s.gpu, k.saved_category, keep, name(b, i, Role::fwd_saved), {params});
    if (k.runs(true)) {
      OpId id = kernel(s.gpu, name(b, i, Role::fwd), k, true, false);
      dag_.depend(id, params);
      touch_kernel(id, b, i, true, i == 0 && full ? checkpoints_[slot_key(b, mb)] : saved[i]);
    }
    tp_collective(b, i, Role::fwd_tp, k.fwd_after);
  }
  release_gather();
}

std::vector<Tensor>& TrainingStepGenerator::saved_of(int b, int64_t mb)
{
  uint64_t key = slot_key(b, mb);
  if (auto r = repeated_saved_.find(key); r != repeated_saved_.end()) {
    saved_[key] = *r->second;
    repeated_saved_.erase(r);
  }
  return saved_[key];
}

void TrainingStepGenerator::emit_recompute(int b, int64_t mb)
{
  Block& blk  = blocks_[b];
  Stage& s    = stage_of(b);
  auto& saved = saved_of(b, mb);
  const SavedActivations policy(cfg_.recompute);
  for (size_t i = 0; i < blk.plan.kernels.size(); ++i) {
    const KernelPlan& k = blk.plan.kernels[i];
    // What backward needs of this kernel and forward did not keep comes back now.
    double back = policy.regenerated(blk.plan, k);
    if (back > 0) {
      Tensor t = dag_.alloc(s.gpu, StreamKind::compute, s.gpu, k.saved_category, back, name(b, i, Role::rc_saved));
      if (saved[i].id == 0) {
        saved[i] = t;
      } else { // a per-op policy kept this kernel's output: its saved inputs come back beside it
        auto& again = regenerated_[slot_key(b, mb)];
        again.resize(blk.plan.kernels.size());
        again[i] = t;
      }
    }
    if (!policy.reruns(blk.plan, k))
      continue;
    if (k.runs(true))
      touch_kernel(kernel(s.gpu, name(b, i, Role::rc), k, true, true), b, i, true, saved[i]);
    if (policy.checkpoints(blk.plan)) // a whole forward again, its collectives with it
      tp_collective(b, i, Role::rc_tp, k.fwd_after);
  }
}

void TrainingStepGenerator::emit_backward(int b, int64_t mb)
{
  Block& blk = blocks_[b];
  Stage& s   = stage_of(b);
  alloc_gradients(b);
  OpId params              = gathered(b);
  const std::string prefix = blk.plan.name + ".bwd.";
  Tensor ws;
  if (blk.plan.backward_workspace > 0)
    ws = dag_.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::workspace, blk.plan.backward_workspace,
                    prefix + "activation_grads", {params});
  if (SavedActivations(cfg_.recompute).recomputes(blk.plan))
    emit_recompute(b, mb);
  auto& saved = saved_of(b, mb);
  auto again  = regenerated_.find(slot_key(b, mb));
  for (size_t i = blk.plan.kernels.size(); i-- > 0;) {
    const KernelPlan& k = blk.plan.kernels[i];
    tp_collective(b, i, Role::bwd_tp_in, k.bwd_before);
    if (k.runs(false) && !(k.accumulates && blk.backwards == 0)) {
      OpId id = kernel(s.gpu, name(b, i, Role::bwd), k, false, false);
      dag_.depend(id, params);
      touch_kernel(id, b, i, false, saved[i]);
    }
    tp_collective(b, i, Role::bwd_tp, k.bwd_after);
    if (saved[i].id != 0)
      dag_.free(saved[i], s.gpu, StreamKind::compute, name(b, i, Role::bwd_free_saved));
    if (again != regenerated_.end() && again->second[i].id != 0)
      dag_.free(again->second[i], s.gpu, StreamKind::compute, name(b, i, Role::bwd_free_regenerated));
  }
  saved_.erase(slot_key(b, mb));
  if (again != regenerated_.end())
    regenerated_.erase(again);
  if (ws.id != 0)
    dag_.free(ws, s.gpu, StreamKind::compute, prefix + "free_activation_grads");
  if (auto c = checkpoints_.find(slot_key(b, mb)); c != checkpoints_.end()) {
    dag_.free(c->second, s.gpu, StreamKind::compute, prefix + "free_checkpoint");
    checkpoints_.erase(c);
  }
  release_gather();
  blk.backwards++;
  reduce_gradients(b, mb);
}

} // namespace memwall

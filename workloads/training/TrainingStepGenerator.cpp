#include "workloads/training/TrainingStepGenerator.hpp"

#include "workloads/training/BlockPasses.hpp"
#include "workloads/training/GradientSync.hpp"
#include "workloads/training/OptimizerStep.hpp"
#include "workloads/training/ParamGather.hpp"
#include "workloads/training/PipelineSlots.hpp"
#include "workloads/training/SavedTensors.hpp"
#include "workloads/training/TensorCollectives.hpp"
#include "workloads/training/TensorTouches.hpp"

namespace memwall {

TrainingStepGenerator::TrainingStepGenerator(const ModelSpec& model, const TrainingConfig& cfg,
                                             const ClusterSpec& cluster)
    : step_(model, cfg, cluster)
{
  StepShape& shape   = step_.shape;
  shape.weight_bytes = weight_bytes_per_param();
  shape.ep_nodes     = cfg.ep > 1 ? step_.layout.ep_nodes() : 1;
  // Virtual stage vs = chunk * pp + stage holds the next cfg.stage_layers()[vs] layers
  // (an even split unless first/last_stage_layers say otherwise); the embedding goes
  // with the first virtual stage, the head with the last.
  const TrainingStack& stack = *step_.stack;
  int64_t virtual_stages     = cfg.pp * cfg.virtual_stages;
  std::vector<int64_t> split = cfg.stage_layers(model.layers);
  auto add                   = [&](BlockPlan plan, int64_t vs) {
    StepBlock b;
    b.plan  = std::move(plan);
    b.stage = static_cast<int>(vs % cfg.pp);
    b.chunk = vs / cfg.pp;
    step_.blocks.push_back(std::move(b));
  };
  add(stack.embedding(model, shape), 0);
  int64_t vs = 0, left = split.empty() ? model.layers : split[0];
  for (int64_t l = 0; l < model.layers; ++l) {
    while (left == 0 && vs + 1 < virtual_stages)
      left = split[static_cast<size_t>(++vs)];
    // Megatron's block method: only a chunk's first recompute_block_layers layers recompute.
    int64_t before = (split.empty() ? model.layers : split[static_cast<size_t>(vs)]) - left; // in its chunk
    add(stack.layer(model, shape, l), vs);
    step_.blocks.back().plan.keeps_all = cfg.recompute_block_layers > 0 && before >= cfg.recompute_block_layers;
    --left;
  }
  add(stack.head(model, shape), virtual_stages - 1);
}

OpDag TrainingStepGenerator::generate(bool chains)
{
  OpDag& dag = step_.dag;
  dag.track_accesses(step_.cfg.record_tensor_accesses);
  dag.set_chains(chains);
  build_stages();
  TensorCollectives calls(step_);
  ParamGather gathers(step_, calls);
  GradientSync grads(step_, calls);
  TensorTouches touches(step_, gathers);
  SavedTensors saved;
  BlockPasses passes(step_, gathers, grads, touches, saved);
  emit_setup(gathers, grads);
  gathers.plan();
  PipelineSlots(step_, passes, saved).emit();
  grads.flush_buckets();
  dag.set_phase(StepPhase::optimizer);
  OptimizerStep(step_, touches).emit();
  return std::move(dag);
}

void TrainingStepGenerator::build_stages()
{
  const TrainingConfig& cfg    = step_.cfg;
  const ParallelLayout& layout = step_.layout;
  OpDag& dag                   = step_.dag;
  const NodeSpec& node         = step_.cluster.node;
  for (int64_t p = 0; p < cfg.pp; ++p) {
    StepStage s;
    s.gpu                        = layout.representative(p);
    s.host                       = DeviceRef{DeviceKind::host, s.gpu.node, node.socket_of_gpu(s.gpu.index)};
    s.nvme                       = DeviceRef{DeviceKind::nvme, s.gpu.node, 0};
    std::vector<DeviceRef> peers = layout.node_peers(p);
    for (const auto& q : peers) {
      s.shadows_on_node++;
      if (node.socket_of_gpu(q.index) == s.host.index)
        s.shadows_on_socket++;
    }
    dag.set_represents(s.gpu, static_cast<int>(layout.ranks_per_stage()));
    dag.set_shadows(s.gpu, peers);
    if (cfg.tp > 1)
      s.tp_group = dag.add_group(layout.tp_group(p), layout.peer_tp_groups(p));
    if (cfg.replicas() > 1)
      s.dp_group = dag.add_group(layout.dp_group(p), layout.peer_dp_groups(p));
    if (cfg.ep > 1)
      s.ep_group = dag.add_group(layout.ep_group(p), layout.peer_ep_groups(p));
    if (cfg.ep > step_.shape.ep_nodes && step_.shape.ep_nodes > 1)
      s.ep_node_group = dag.add_group(layout.ep_node_group(p), layout.peer_ep_node_groups(p));
    if (cfg.etp > 1)
      s.etp_group = cfg.etp == cfg.tp ? s.tp_group : dag.add_group(layout.etp_group(p), layout.peer_etp_groups(p));
    if (cfg.cp > 1)
      s.cp_group = dag.add_group(layout.cp_group(p), layout.peer_cp_groups(p));
    // Routed experts' gradients: among the ranks holding the same expert shard (none when
    // etp x ep spans all of them); without MoE folding, the dp group.
    s.reduce_groups[0] = s.dp_group;
    s.reduce_groups[1] = !cfg.experts_folded() ? s.dp_group
                         : layout.edp() > 1    ? dag.add_group(layout.edp_group(p), layout.peer_edp_groups(p))
                                               : -1;
    s.chunks.resize(static_cast<size_t>(cfg.virtual_stages));
    step_.stages.push_back(std::move(s));
  }
  for (size_t b = 0; b < step_.blocks.size(); ++b)
    step_.stages[step_.blocks[b].stage].chunks[step_.blocks[b].chunk].push_back(static_cast<int>(b));
  if (cfg.zero <= 1) // the gradients' buckets, and the updated weights' under overlap_param_gather
    for (size_t p = 0; p < step_.stages.size(); ++p)
      step_.stages[p].buckets = grad_buckets(step_, static_cast<int>(p));
}

void TrainingStepGenerator::emit_setup(const ParamGather& gathers, const GradientSync& grads)
{
  const TrainingConfig& cfg = step_.cfg;
  OpDag& dag                = step_.dag;
  const double ctx          = step_.cluster.node.gpu.context_bytes;
  for (auto& s : step_.stages)
    if (ctx > 0)
      dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::context, ctx, "cuda_context");
  // Memory in a host or NVMe pool is shared by every rank of the node placed there: the
  // representative allocates their share too.
  auto place = [&](const StepStage& s, OffloadTarget where, MemCategory c, double bytes, const std::string& name) {
    DeviceRef pool = step_.state_pool(s, where);
    if (where != OffloadTarget::none)
      bytes *= step_.host_share(s, where == OffloadTarget::nvme);
    return dag.alloc(s.gpu, StreamKind::compute, pool, c, bytes, name);
  };
  for (size_t index = 0; index < step_.blocks.size(); ++index) {
    StepBlock& b       = step_.blocks[index];
    const StepStage& s = step_.stages[b.stage];
    if (b.plan.frozen_params > 0)
      dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::weights,
                b.plan.frozen_bytes > 0 ? b.plan.frozen_bytes : b.plan.frozen_params * step_.shape.frozen_weight_bytes,
                b.plan.name + ".frozen_weights");
    if (b.plan.cached_weight_bytes > 0)
      dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::weights, b.plan.cached_weight_bytes,
                b.plan.name + ".cached_weights");
    if (b.plan.params <= 0)
      continue;
    double weights = b.plan.params * weight_bytes_per_param();
    if (cfg.zero == 3) {
      // Persistent tensors (DeepSpeed's small parameters) are held whole, the rest sharded.
      double whole = gathers.persistent_params(static_cast<int>(index)) * weight_bytes_per_param();
      b.weights    = place(s, cfg.offload_params, MemCategory::weights,
                           (weights - whole) / static_cast<double>(cfg.replicas()) + whole, b.plan.name + ".weight_shard");
    } else
      b.weights = place(s, OffloadTarget::none, MemCategory::weights, weights, b.plan.name + ".weights");
    if (grads.ddp_bucket_copies())
      dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::gradients, b.plan.params * gradient_bytes_per_param(),
                b.plan.name + ".ddp_bucket");
    const double states_per_param =
        b.plan.optimizer_bytes > 0 ? b.plan.optimizer_bytes / b.plan.params : optimizer_bytes_per_param();
    b.states = place(s, cfg.offload_optimizer, MemCategory::optimizer,
                     step_.shard(static_cast<int>(index), b.plan.params) * states_per_param,
                     b.plan.name + ".optimizer_states");
  }
}

} // namespace memwall

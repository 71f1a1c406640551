#include "workloads/training/StepBuild.hpp"

namespace memwall {

StepBuild::StepBuild(const ModelSpec& model, const TrainingConfig& cfg, const ClusterSpec& cluster)
    : model(model), cfg(cfg), stack(cfg.stack), state_bytes(stack->state_bytes(cfg, model)), cluster(cluster),
      layout(cfg, cluster.gpus_per_node), shape(step_shape(cfg))
{}

double StepBuild::shard(double params) const
{
  return cfg.zero >= 1 ? params / static_cast<double>(cfg.replicas()) : params;
}

std::pair<double, double> StepBuild::dense_and_experts(int b, double full) const
{
  const BlockPlan& p = blocks[b].plan;
  if (!cfg.experts_folded() || p.expert_params <= 0 || p.params <= 0)
    return {full, 0.0};
  double experts = full * p.expert_params / p.params;
  return {full - experts, experts};
}

double StepBuild::shard(int b, double full) const
{
  // Without ZeRO nothing is sharded: a rank keeps every state of the experts it holds.
  if (cfg.zero == 0)
    return full;
  auto [dense, experts] = dense_and_experts(b, full);
  return shard(dense) + shard(experts) * cfg.expert_shard_scale();
}

double StepBuild::host_share(const StepStage& s, bool nvme) const
{
  return nvme ? s.shadows_on_node : s.shadows_on_socket;
}

DeviceRef StepBuild::state_pool(const StepStage& s, OffloadTarget t) const
{
  return t == OffloadTarget::cpu ? s.host : t == OffloadTarget::nvme ? s.nvme : s.gpu;
}

StreamKind StepBuild::zero_stream(StreamKind own) const
{
  return stack->serial_collectives(cfg) ? StreamKind::compute : own;
}

} // namespace memwall

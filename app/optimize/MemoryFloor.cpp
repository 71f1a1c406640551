#include "app/optimize/MemoryFloor.hpp"

#include "workloads/training/SavedActivations.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <algorithm>
#include <map>

namespace memwall {

double model_state_floor_bytes(const ExperimentSpec& spec)
{
  const TrainingConfig& t = spec.training;
  const ModelSpec& m      = spec.model;
  const double context    = spec.cluster.node.gpu.context_bytes;
  // LoRA's frozen base is held in its own format beside tiny trainable states: no floor
  // worth the risk of pruning a layout that fits.
  if (spec.serving || t.lora.enabled)
    return context;
  const ModelStateBytes b          = t.stack->state_bytes(t, m);
  const std::vector<int64_t> split = t.stage_layers(m.layers);
  if (split.empty())
    return context;
  const double tp = static_cast<double>(t.tp), replicas = static_cast<double>(t.replicas());
  const double experts_split = static_cast<double>(t.ep * t.etp);
  // Ranks holding one expert shard's optimizer states (Megatron-Core's edp group).
  const double edp             = std::max(1.0, tp * replicas / experts_split);
  const double weight_share    = t.offload_params != OffloadTarget::none ? 0.0 : t.zero == 3 ? 1.0 / replicas : 1.0;
  const bool optimizer_on_gpu  = t.offload_optimizer == OffloadTarget::none;
  const double optimizer_share = t.zero >= 1 ? 1.0 / replicas : 1.0;
  // What each layer keeps from forward to backward under the recompute policy, from the
  // stack's own plan of its blocks (the embedding's on the first virtual stage, the
  // head's logits on the last).
  const auto& stack  = t.stack;
  StepShape shape    = step_shape(t);
  shape.weight_bytes = b.weights;
  const SavedActivations saved(t.recompute);
  auto kept = [&](const BlockPlan& p) {
    if (saved.checkpoints(p))
      return p.input_bytes;
    double bytes = 0;
    for (const KernelPlan& k : p.kernels)
      bytes += saved.kept(p, k);
    return bytes;
  };
  std::map<std::pair<bool, bool>, double> layer_kept; // by (MoE layer, windowed layer)
  // Virtual stage k (chunk * pp + stage) holds the next split[k] layers; a tp rank holds
  // at least 1/tp of a layer's dense parameters (some, like the norms, whole) and
  // 1/(ep x etp) of its routed experts.
  std::vector<double> dense(static_cast<size_t>(t.pp)), expert(static_cast<size_t>(t.pp));
  std::vector<double> chunk_bytes(split.size());
  int64_t layer = 0;
  for (size_t k = 0; k < split.size(); ++k) {
    size_t stage = k % static_cast<size_t>(t.pp);
    for (int64_t i = 0; i < split[k]; ++i, ++layer) {
      double experts = m.moe_layer(layer) ? static_cast<double>(m.moe.experts) * m.expert_params() : 0.0;
      dense[stage] += (m.layer_params(layer) - experts) / tp;
      expert[stage] += experts / experts_split;
      std::pair<bool, bool> kind{m.moe_layer(layer), m.windowed_layer(layer)};
      auto it = layer_kept.find(kind);
      if (it == layer_kept.end())
        it = layer_kept.emplace(kind, kept(stack->layer(m, shape, layer))).first;
      chunk_bytes[k] += it->second;
    }
  }
  dense.front() += m.embedding_params() / tp;
  dense.back() += m.head_params() / tp;
  chunk_bytes.front() += kept(stack->embedding(m, shape));
  chunk_bytes.back() += kept(stack->head(m, shape));
  // The schedule's order says how many (micro-batch, chunk) passes a stage has run
  // forward and not yet backward.
  const auto& schedule = t.pipeline_schedule;
  std::vector<double> held(static_cast<size_t>(t.pp));
  for (int64_t stage = 0; stage < t.pp; ++stage) {
    double bytes = 0;
    for (const PipelineSlot& slot : schedule->order(stage, t.pp, t.virtual_stages, t.micro_batches())) {
      double chunk = chunk_bytes[static_cast<size_t>(slot.chunk * t.pp + stage)];
      bytes += slot.forward ? chunk : -chunk;
      held[static_cast<size_t>(stage)] = std::max(held[static_cast<size_t>(stage)], bytes);
    }
  }
  double most = 0;
  for (size_t s = 0; s < dense.size(); ++s) {
    double bytes = (dense[s] + expert[s]) * b.weights * weight_share + held[s];
    if (optimizer_on_gpu)
      bytes += (dense[s] * optimizer_share + expert[s] * (t.zero >= 1 ? 1.0 / edp : 1.0)) * b.optimizer;
    most = std::max(most, bytes);
  }
  return most + context;
}

} // namespace memwall
